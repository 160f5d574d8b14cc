// Phase-split kernels: a block kernel written as the code between its barriers.
//
// Each phase is called as `phase(self, state, args...)` for every thread of the block,
// where `state` is that thread's private State, kept from phase to phase (the registers
// a GPU thread would keep across __syncthreads()). On CPU a phase is a plain loop over the
// block's threads, the fast path for block barriers (no fibers, no context switches); on
// GPU the phases are separated by __syncthreads(). Both give the same results as the
// same kernel written with barrier(). The scratchpad is shared by the phases: the k-th
// scratchpad<T>(n) call of each phase returns the same storage.
#pragma once

#include <strata/config.hpp>

#include <tuple>
#include <type_traits>
#include <utility>

namespace strata {

template <class State, class... Phases>
struct phased_kernel {
  static_assert(sizeof...(Phases) >= 1, "a phase-split kernel needs at least one phase");
  static_assert(std::is_default_constructible_v<State>,
                "phases: the per-thread State must be default-constructible");
  using state_type = State;
  static constexpr std::size_t phase_count = sizeof...(Phases);
  std::tuple<Phases...> phases;
};

/// strata::phases<State>(phase0, phase1, ...): a kernel of barrier-separated phases.
template <class State, class... Phases>
phased_kernel<State, std::decay_t<Phases>...> phases(Phases&&... p) {
  return {std::tuple<std::decay_t<Phases>...>(std::forward<Phases>(p)...)};
}

template <class K>
struct is_phased_kernel : std::false_type {};
template <class S, class... P>
struct is_phased_kernel<phased_kernel<S, P...>> : std::true_type {};
template <class K>
inline constexpr bool is_phased_kernel_v = is_phased_kernel<std::remove_cvref_t<K>>::value;

}  // namespace strata
