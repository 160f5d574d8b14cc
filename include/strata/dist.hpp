// The distributed layer (strata::dist, library target strata::dist, built when
// STRATA_ENABLE_MPI is on): ranks as places, remote tasks, global pointers with one-sided
// put/get and atomics, teams and collectives, distributed array types and tensors. See
// docs/dist.md.
#pragma once

#include <strata/dist/array.hpp>
#include <strata/dist/async.hpp>
#include <strata/dist/collectives.hpp>
#include <strata/dist/global_ptr.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/dist/serialize.hpp>
#include <strata/dist/team_allocate.hpp>
#include <strata/dist/tensor.hpp>
#include <strata/dist/thread_array.hpp>
