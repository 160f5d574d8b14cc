// The memory layer: spaces, typed pointers, allocation, buffers and views.
#pragma once

#include <strata/memory/allocate.hpp>
#include <strata/memory/arena.hpp>
#include <strata/memory/buffer.hpp>
#include <strata/memory/mapped_file.hpp>
#include <strata/memory/ptr.hpp>
#include <strata/memory/space.hpp>
