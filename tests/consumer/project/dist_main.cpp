// A consumer of strata::dist, run as a single MPI process (no mpiexec: MPI's singleton).
#include <strata/dist.hpp>

#include <cstdio>

namespace {
struct twice {
  int operator()(int x) const { return 2 * x; }
};
}  // namespace

int main(int argc, char** argv) {
  strata::dist::runtime rt(argc, argv);
  int const v = strata::dist::async(rt.here(), twice{}, 21).get();
  auto g = strata::dist::allocate<int>(rt.here(), 4).get();
  int const in[4] = {1, 2, 3, 4};
  int out[4] = {};
  strata::dist::put(g, in, 4).wait();
  strata::dist::get(out, g, 4).wait();
  strata::dist::deallocate(g).wait();
  if (v != 42 || out[3] != 4) {
    std::printf("consumer_dist: wrong results (%d, %d)\n", v, out[3]);
    return 1;
  }
  std::printf("consumer_dist: %d rank(s), ok\n", rt.size());
  return 0;
}
