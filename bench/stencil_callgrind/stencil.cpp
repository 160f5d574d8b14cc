// A 2-D 5-point Jacobi sweep twice, for callgrind: once as a kernel over a padded tensor's
// cells through iterators (Ripple §5.2) on the serial backend, once as the raw-index loop
// over a padded array. tools/callgrind-saxpy.sh prints the instruction ratio (the
// iterators' overhead, deterministic unlike timings).
// Built twice: on doubles (stencil_callgrind), and with STRATA_STENCIL_INT64 on int64
// cells at -O3 (stencil_int64_callgrind), where the raw loop vectorizes: a kernel's
// int64 store may alias anything of type index_t for the compiler, so an iterator that
// read its row stride through its block reloaded it after every store and the row loop
// stayed scalar (tensor/iterator.hpp); that check fails if it does again.
#include <strata/strata.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

namespace {

#ifdef STRATA_STENCIL_INT64
using cell_t = std::int64_t;
constexpr cell_t expected = 4;
#else
using cell_t = double;
constexpr cell_t expected = 1;
#endif

template <class T>
STRATA_FN T average(T a, T b, T c, T d) {
  if constexpr (std::is_floating_point_v<T>)
    return 0.25 * (a + b + c + d);
  else
    return a + b + c + d;  // integers: the sum (a division would cost more than the rest)
}

struct jacobi_cell {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = average(*in.offset(0, -1), *in.offset(0, 1), *in.offset(1, -1), *in.offset(1, 1));
  }
};

// One call per side; noinline so that callgrind can toggle collection on each.
[[gnu::noinline]] void strata_side(strata::tensor<cell_t, 2> const& a,
                                   strata::tensor<cell_t, 2> const& b) {
  strata::for_each_cell(jacobi_cell{}, a, b).wait();
}

[[gnu::noinline]] void raw_side(long n, cell_t const* in, cell_t* out) {
  long const w = n + 2;
  for (long i = 1; i <= n; ++i)
    for (long j = 1; j <= n; ++j)
      out[i * w + j] =
          average(in[(i - 1) * w + j], in[(i + 1) * w + j], in[i * w + j - 1], in[i * w + j + 1]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "strata") != 0 && std::strcmp(argv[1], "raw") != 0)) {
    std::fprintf(stderr, "usage: stencil_callgrind strata|raw N\n");
    return 2;
  }
  long const n = std::atol(argv[2]);
  strata::runtime rt({.cuda = false, .cpu_backend = strata::backend_id::serial});
  cell_t result = 0;
  if (argv[1][0] == 's') {
    std::vector<strata::place> host{rt.machine().processors().front()};
    strata::tensor_spec<2> spec{.extent = {n, n}, .padding = 1};
    strata::tensor<cell_t, 2> a(host, spec), b(host, spec);
    strata::fill(a, cell_t{1}).wait();
    strata_side(a, b);
    std::vector<cell_t> out(static_cast<std::size_t>(n * n));
    strata::copy(strata::view<cell_t, 2>(strata::ptr<cell_t, strata::host_space>(out.data(), 0),
                                         strata::vec<2>{n, n}),
                 b)
        .wait();
    result = out[static_cast<std::size_t>(n * n / 2)];
  } else {
    std::vector<cell_t> in(static_cast<std::size_t>((n + 2) * (n + 2)), cell_t{1}), out(in.size());
    raw_side(n, in.data(), out.data());
    result = out[static_cast<std::size_t>((n / 2 + 1) * (n + 2) + n / 2)];
  }
  std::printf("cell = %g\n", static_cast<double>(result));
  return result == expected ? 0 : 1;
}
