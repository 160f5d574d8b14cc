// The execution layer: shapes, domains, launch, events, queues and the CPU backends; what
// kernels call on every backend (atomics, math, random numbers).
#pragma once

#include <strata/exec/atomic.hpp>
#include <strata/exec/backend.hpp>
#include <strata/exec/copy.hpp>
#include <strata/exec/domain.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/launch.hpp>
#include <strata/exec/math.hpp>
#include <strata/exec/phases.hpp>
#include <strata/exec/queue.hpp>
#include <strata/exec/random.hpp>
#include <strata/exec/shape.hpp>
#include <strata/exec/sim/speed.hpp>
#include <strata/exec/thread_array.hpp>
#include <strata/exec/trace.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/vec.hpp>
