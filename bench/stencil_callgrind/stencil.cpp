// A 2-D 5-point Jacobi sweep twice, for callgrind: once as a kernel over a padded tensor's
// cells through iterators (Ripple §5.2) on the serial backend, once as the raw-index loop
// over a padded array. tools/callgrind-saxpy.sh prints the instruction ratio (the
// iterators' overhead, deterministic unlike timings).
#include <strata/strata.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

struct jacobi_cell {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = 0.25 * (*in.offset(0, -1) + *in.offset(0, 1) + *in.offset(1, -1) + *in.offset(1, 1));
  }
};

// One call per side; noinline so that callgrind can toggle collection on each.
[[gnu::noinline]] void strata_side(strata::tensor<double, 2> const& a,
                                   strata::tensor<double, 2> const& b) {
  strata::for_each_cell(jacobi_cell{}, a, b).wait();
}

[[gnu::noinline]] void raw_side(long n, double const* in, double* out) {
  long const w = n + 2;
  for (long i = 1; i <= n; ++i)
    for (long j = 1; j <= n; ++j)
      out[i * w + j] = 0.25 * (in[(i - 1) * w + j] + in[(i + 1) * w + j] + in[i * w + j - 1] +
                               in[i * w + j + 1]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "strata") != 0 && std::strcmp(argv[1], "raw") != 0)) {
    std::fprintf(stderr, "usage: stencil_callgrind strata|raw N\n");
    return 2;
  }
  long const n = std::atol(argv[2]);
  strata::runtime rt({.cuda = false, .cpu_backend = strata::backend_id::serial});
  double result = 0;
  if (argv[1][0] == 's') {
    std::vector<strata::place> host{rt.machine().processors().front()};
    strata::tensor_spec<2> spec{.extent = {n, n}, .padding = 1};
    strata::tensor<double, 2> a(host, spec), b(host, spec);
    strata::fill(a, 1.0).wait();
    strata_side(a, b);
    std::vector<double> out(static_cast<std::size_t>(n * n));
    strata::copy(strata::view<double, 2>(strata::ptr<double, strata::host_space>(out.data(), 0),
                                         strata::vec<2>{n, n}),
                 b)
        .wait();
    result = out[static_cast<std::size_t>(n * n / 2)];
  } else {
    std::vector<double> in(static_cast<std::size_t>((n + 2) * (n + 2)), 1.0), out(in.size());
    raw_side(n, in.data(), out.data());
    result = out[static_cast<std::size_t>((n / 2 + 1) * (n + 2) + n / 2)];
  }
  std::printf("cell = %g\n", result);
  return result == 1.0 ? 0 : 1;
}
