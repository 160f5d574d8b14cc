// Kernels over cells and for_each_record compiled by clang with -O3 -Wall -Wextra -Werror
// (cmake/run_clang_consumer.cmake, test clang.kernels_without_warnings): a consumer's
// build must not warn because of Strata's headers. Session 40: clang's
// `loop vectorize(assume_safety)` on the row loops warned (-Wpass-failed, on by default)
// for every kernel that could not be vectorized, here the ones that may throw; and the
// OpenMP backend's region struct left a field to -Wmissing-field-initializers.
#include <strata/strata.hpp>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace {

using namespace strata;

struct state {
  struct rho : field<float> {};
  struct mom : field<float, 2> {};
  using fields = strata::fields<rho, mom>;
};

// A stencil the compiler may vectorize, and a kernel it cannot (it may throw).
struct sweep {
  template <class O, class I>
  void operator()(O& out, I& in) const {
    auto o = *out;
    o[state::rho{}] =
        in.offset(0, -1)->template get<state::rho>() + in.offset(0, 1)->template get<state::rho>();
    o[state::mom{}][0] = (*in)[state::mom{}][1];
    o[state::mom{}][1] = 0.0f;
  }
};
struct check_range {
  template <class O>
  void operator()(O& out) const {
    if ((*out)[state::rho{}] > 1.0e6f) throw std::runtime_error("out of range");
  }
};
// for_each_record with a body that may throw.
struct mark {
  template <class Self, class P>
  void operator()(Self const& self, P p) const {
    for_each_record(p, self.elements(p.size()), [](auto r) {
      if (r.template get<state::rho>() < -1.0f) throw std::runtime_error("negative");
      r.template get<state::rho>() = 1.0f;
    });
  }
};

int fail(char const* what) {
  std::fprintf(stderr, "kernels_under_clang: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  runtime rt;
  std::vector<place> host{rt.machine().slice(isa::host)};
  index_t const n = 257;
  tensor_spec<1> s{.extent = {n}, .partitions = {1}, .padding = 1};
  tensor<records<state, soa>, 1> in(host, s), out(host, s);
  for_each_cell(
      [](auto& it) {
        auto c = *it;
        c[state::rho{}] = float(it.global_index(0));
        c[state::mom{}][0] = 1.0f;
        c[state::mom{}][1] = 2.0f;
      },
      in)
      .wait();
  set_boundary(in, boundary::periodic{});
  for_each_cell(sweep{}, out, concurrent_padded_access(in)).wait();
  for_each_cell(check_range{}, out).wait();

  record_array<state, aos> got(host[0], out.size());
  copy(got.view(), out).wait();
  for (index_t i = 0; i < n; ++i) {
    float const want = float((i + n - 1) % n) + float((i + 1) % n);
    if (!(got[i][state::rho{}] == want) || !(got[i][state::mom{}][0] == 2.0f))
      return fail("the stencil's result differs from the reference");
  }

  record_array<state, aos> init(host[0], 100);
  for (index_t i = 0; i < 100; ++i) {
    init[i][state::rho{}] = 0.0f;
    init[i][state::mom{}][0] = init[i][state::mom{}][1] = 0.0f;
  }
  record_array<state, soa> r(host[0], 100);
  copy(r.view(), init.view()).wait();
  launch(host[0], divide_work(host[0], index_t{100}), mark{}, r.view()).wait();
  record_array<state, aos> back(host[0], 100);
  copy(back.view(), r.view()).wait();
  for (index_t i = 0; i < 100; ++i)
    if (!(back[i][state::rho{}] == 1.0f)) return fail("for_each_record missed a record");
  std::puts("kernels under clang: ok");
  return 0;
}
