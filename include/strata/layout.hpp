// The layout layer: PARRAY array types (dimension trees, references, displacements,
// contiguity), views, layout-changing copies and tiles; Ripple record layouts (AoS, SoA,
// AoSoA) with their copies.
#pragma once

#include <strata/layout/array_type.hpp>
#include <strata/layout/contiguity.hpp>
#include <strata/layout/copy.hpp>
#include <strata/layout/dims.hpp>
#include <strata/layout/inner_memory.hpp>
#include <strata/layout/record_copy.hpp>
#include <strata/layout/record_grouped.hpp>
#include <strata/layout/spec.hpp>
#include <strata/layout/strided.hpp>
#include <strata/layout/thread_type.hpp>
#include <strata/layout/tile.hpp>
