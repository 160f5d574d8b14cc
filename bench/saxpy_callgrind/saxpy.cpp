// saxpy twice, for callgrind: once as a Strata kernel on the serial backend, once as the
// raw loop. `valgrind --tool=callgrind --toggle-collect=<side>` counts the instructions
// of one side only (tools/callgrind-saxpy.sh prints the ratio).
#include <strata/strata.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

struct saxpy {
  template <class Self>
  void operator()(Self const& self, float a, strata::index_t n, float const* x, float* y) const {
    for (auto i : self.elements(n)) y[i] = a * x[i] + y[i];
  }
};

// One call per side; noinline so that callgrind can toggle collection on each.
[[gnu::noinline]] void strata_side(strata::target const& where, int n, float a, float const* x,
                                   float* y) {
  strata::launch(where, strata::grid((n + 4095) / 4096).elements(4096), saxpy{}, a,
                 strata::index_t{n}, x, y)
      .wait();
}

[[gnu::noinline]] void raw_side(int n, float a, float const* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "strata") != 0 && std::strcmp(argv[1], "raw") != 0)) {
    std::fprintf(stderr, "usage: saxpy_callgrind strata|raw N\n");
    return 2;
  }
  int const n = std::atoi(argv[2]);
  strata::runtime rt({.cuda = false});
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f), y(static_cast<std::size_t>(n), 2.0f);
  auto where = strata::on(rt.machine().processors().front(), strata::backend_id::serial);
  if (argv[1][0] == 's')
    strata_side(where, n, 3.0f, x.data(), y.data());
  else
    raw_side(n, 3.0f, x.data(), y.data());
  std::printf("y[n-1] = %g\n", static_cast<double>(y[static_cast<std::size_t>(n) - 1]));
  return y[static_cast<std::size_t>(n) - 1] == 5.0f ? 0 : 1;
}
