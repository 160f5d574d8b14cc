// Everything public in Strata, one include.
#pragma once

#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/exec.hpp>
#include <strata/layout.hpp>
#include <strata/machine.hpp>
#include <strata/memory.hpp>
#include <strata/runtime.hpp>
#include <strata/task.hpp>
#include <strata/tensor.hpp>
