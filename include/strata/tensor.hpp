// The tensor layer (Ripple §4.1, §5.2-5.4): partitioned tensors with padding, iterators,
// padding loads with boundary policies, kernels over cells, graph splits with padded
// access, reductions. See docs/tensor.md.
#pragma once

#include <strata/tensor/boundary.hpp>
#include <strata/tensor/geometry.hpp>
#include <strata/tensor/hybrid.hpp>
#include <strata/tensor/iterator.hpp>
#include <strata/tensor/reduce.hpp>
#include <strata/tensor/split.hpp>
#include <strata/tensor/tensor.hpp>
