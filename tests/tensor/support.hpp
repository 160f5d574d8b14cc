// Shared helpers of the tensor tests: places of several kinds and host copies of tensors.
#pragma once

#include "kernels.hpp"

#include <strata/strata.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tensor_test {

/// The record the record-tensor tests share: a double, a 2-float vector and an int32 (an
/// AoS record with padding; SoA arrays of three element sizes).
struct cell {
  struct rho : strata::field<double> {};
  struct vel : strata::field<float, 2> {};
  struct tag : strata::field<std::int32_t> {};
  using fields = strata::fields<rho, vel, tag>;
};

/// A runtime with four sim devices (two units each, so kernels run concurrently inside).
inline strata::runtime& rt() {
  static strata::runtime r{
      strata::runtime_options{.sim_devices = "4:units=2,lat=2us,bw=20GB/s,mem=256MiB"}};
  return r;
}

inline std::vector<strata::place> sim_devices(std::size_t n) {
  auto all = rt().machine().slice(strata::isa::sim).descendants(strata::place_type::device);
  all.resize(n);
  return all;
}

inline std::vector<strata::place> host() {
  return {rt().machine().slice(strata::isa::host)};
}

/// The CUDA GPUs of the machine (none without a GPU or a driver).
inline std::vector<strata::place> cuda_devices() {
  return rt().machine().slice(strata::isa::cuda).descendants(strata::place_type::device);
}

/// Where a test runs: "host" (one CPU place for every partition), "simK", "cuda" (every
/// GPU), or two kinds joined by '+' ("host+cuda": partitions alternate between them).
inline std::vector<strata::place> places(std::string const& where) {
  if (auto plus = where.find('+'); plus != std::string::npos) {
    auto a = places(where.substr(0, plus)), b = places(where.substr(plus + 1));
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  if (where == "host") return host();
  if (where == "cuda") return cuda_devices();
  return sim_devices(static_cast<std::size_t>(std::stoul(where.substr(3))));
}

/// Every cell of t, row-major, on the host.
template <class T, std::size_t N>
std::vector<T> gather(strata::tensor<T, N> const& t) {
  std::vector<T> out(t.size());
  strata::view<T, N> v(strata::ptr<T, strata::host_space>(out.data(), 0), t.extent());
  strata::copy(v, t).wait();
  return out;
}

/// Block b's whole padded box, row-major, on the host.
template <class T, std::size_t N>
std::vector<T> padded_box(strata::tensor<T, N> const& t, std::size_t b) {
  auto ext = t.block(b).padded_extent();
  std::vector<T> out(static_cast<std::size_t>(ext.product()));
  strata::view<T, N> v(strata::ptr<T, strata::host_space>(out.data(), 0), ext);
  strata::tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
    strata::copy(v, t.template padded_view<decltype(sp)>(b)).wait();
  });
  return out;
}

/// Sets every cell from a host array.
template <class T, std::size_t N>
void scatter(strata::tensor<T, N> const& t, std::vector<T> const& in) {
  strata::view<T, N> v(strata::ptr<T, strata::host_space>(const_cast<T*>(in.data()), 0),
                       t.extent());
  strata::copy(t, v).wait();
}

/// Two periodic 1-D int64 tensors of n cells (4 partitions of 2 blocks, `padding`) on
/// `p`, x holding start_values(n) (kept in `ref`): the double-buffered smoothing tests'
/// setup.
struct periodic_pair {
  strata::tensor<std::int64_t, 1> x, y;
  std::vector<std::int64_t> ref;
  periodic_pair(std::vector<strata::place> const& p, strata::index_t n, strata::index_t padding)
      : x(p, spec(n, padding)),
        y(p, spec(n, padding)),
        ref(start_values(static_cast<std::size_t>(n))) {
    strata::set_boundary(x, strata::boundary::periodic{});
    strata::set_boundary(y, strata::boundary::periodic{});
    scatter(x, ref);
  }
  static strata::tensor_spec<1> spec(strata::index_t n, strata::index_t padding) {
    return {.extent = {n}, .partitions = {4}, .sub_partitions = {2}, .padding = padding};
  }
};

}  // namespace tensor_test
