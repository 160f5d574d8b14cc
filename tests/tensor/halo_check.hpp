// The padding check of the tensor tests (Ripple §5.4, Figure 6): every padding cell of
// every block after load_padding against a reference computed on a plain array, for each
// boundary policy. Shared by halo_test.cpp (host and sim places) and tensor_cuda_test.cu
// (CUDA places, whose edge kernels must be compiled by nvcc).
#pragma once

#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace tensor_test {

using namespace strata;

enum class policy { none, constant, copy, reflect, periodic, user };

inline std::string name(policy p) {
  switch (p) {
    case policy::none:
      return "none";
    case policy::constant:
      return "constant";
    case policy::copy:
      return "copy";
    case policy::reflect:
      return "reflect";
    case policy::periodic:
      return "periodic";
    case policy::user:
      return "user";
  }
  return "?";
}

struct user_loader {
  template <class It>
  STRATA_FN void operator()(It& it, std::size_t dim, int side) const {
    *it = 1000 * static_cast<std::int64_t>(dim + 1) + side;
  }
};

template <std::size_t N>
std::int64_t cell_value(vec<N> const& g) {
  std::int64_t v = 0;
  for (std::size_t d = 0; d < N; ++d) v = v * 1009 + g[d] + 1;
  return v;
}

/// The value a padding cell at global index g must hold; false when it is not defined
/// (policy none at an edge).
template <std::size_t N>
bool expected(policy p, vec<N> g, vec<N> const& ext, std::int64_t& out) {
  long last_out = -1;
  for (std::size_t d = 0; d < N; ++d) {
    bool outside = g[d] < 0 || g[d] >= ext[d];
    if (!outside) continue;
    last_out = static_cast<long>(d);
    switch (p) {
      case policy::none:
        return false;
      case policy::constant:
        out = -7;
        return true;
      case policy::copy:
        g[d] = g[d] < 0 ? 0 : ext[d] - 1;
        break;
      case policy::reflect:
        g[d] = g[d] < 0 ? -g[d] - 1 : 2 * ext[d] - g[d] - 1;
        break;
      case policy::periodic:
        g[d] = (g[d] + ext[d]) % ext[d];
        break;
      case policy::user:
        break;
    }
  }
  if (p == policy::user && last_out >= 0) {
    out = 1000 * (last_out + 1) + (g[static_cast<std::size_t>(last_out)] < 0 ? -1 : 1);
    return true;
  }
  out = cell_value(g);
  return true;
}

// `exchange_first`: one exchange before the policy is set (the halo copies are planned
// at the first exchange; a later set_boundary must re-plan them: periodic adds copies).
template <std::size_t N>
void check_padding(std::string const& where, policy pol, tensor_spec<N> spec,
                   bool exchange_first = false) {
  SCOPED_TRACE(where + " policy " + name(pol) + " rank " + std::to_string(N) + " padding " +
               std::to_string(spec.padding));
  tensor<std::int64_t, N> t(places(where), spec);
  if (exchange_first) {
    if (pol == policy::periodic)
      set_boundary(t, boundary::none{});
    else
      set_boundary(t, boundary::periodic{});
    load_padding(t).wait();
  }
  switch (pol) {
    case policy::none:
      set_boundary(t, boundary::none{});
      break;
    case policy::constant:
      set_boundary(t, boundary::constant<std::int64_t>{-7});
      break;
    case policy::copy:
      set_boundary(t, boundary::copy{});
      break;
    case policy::reflect:
      set_boundary(t, boundary::reflect{});
      break;
    case policy::periodic:
      set_boundary(t, boundary::periodic{});
      break;
    case policy::user:
      set_boundary(t, user_loader{});
      break;
  }
  fill(t, std::int64_t{-999}).wait();
  std::vector<std::int64_t> h(t.size());
  for (std::size_t i = 0; i < h.size(); ++i)
    h[i] = cell_value(delinearize(static_cast<index_t>(i), spec.extent));
  scatter(t, h);
  load_padding(t).wait();
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    auto box = padded_box(t, b);
    auto pe = blk.padded_extent();
    for (index_t i = 0; i < pe.product(); ++i) {
      auto local = delinearize(i, pe);
      vec<N> g{};
      for (std::size_t d = 0; d < N; ++d) g[d] = blk.origin[d] + local[d] - blk.padding;
      std::int64_t want = 0;
      if (!expected(pol, g, spec.extent, want)) continue;
      auto got = box[static_cast<std::size_t>(i)];
      if (got != want) {
        std::string at;
        for (std::size_t d = 0; d < N; ++d) at += std::to_string(g[d]) + " ";
        FAIL() << "block " << b << " global cell ( " << at << ") holds " << got << ", expected "
               << want;
      }
    }
  }
}

}  // namespace tensor_test
