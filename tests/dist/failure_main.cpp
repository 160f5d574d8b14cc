// Programs that fail on one rank only, run under mpiexec by tests/dist/CMakeLists.txt,
// which checks their output: the job must end with a message, not hang (docs/dist.md
// "When a rank fails"). The mode is the first argument:
//   leave    rank 1 leaves the dist::runtime's scope by an exception while the others
//            wait in a barrier: ~runtime ends the job after the failure grace.
//   for      one process of a dist::for_ranks body throws while the others wait in a
//            team barrier inside the body: the failed member ends the job after the grace.
//   return   one process of a dist::for_ranks body returns at once while the others wait
//            in a team barrier it never joins: they end the job after the grace.
//   together every rank throws the same error: they all reach ~runtime, nothing aborts,
//            every rank prints it and exits 1.
#include <strata/dist.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dist = strata::dist;

int main(int argc, char** argv) {
  std::string const mode = argc > 1 ? argv[1] : "";
  try {
    dist::runtime rt(argc, argv);
    auto const& w = rt.world();
    if (mode == "leave") {
      if (rt.rank() == 1) throw std::runtime_error("rank 1 fails alone");
      dist::barrier(w).wait();
    } else if (mode == "for") {
      strata::thread_array<strata::thread_kind::mpi> const P{rt.size()};
      dist::for_ranks(w, P, [&](dist::rank_context const& p) {
        if (p.tid() == 1) throw std::runtime_error("process 1 fails in its body");
        dist::barrier(w).wait();
        p.sync();
      });
    } else if (mode == "return") {
      strata::thread_array<strata::thread_kind::mpi> const P{rt.size()};
      dist::for_ranks(w, P, [&](dist::rank_context const& p) {
        if (p.tid() == 1) return;
        dist::barrier(w).wait();
        p.sync();
      });
    } else if (mode == "together") {
      dist::barrier(w).wait();
      throw std::runtime_error("every rank fails alike");
    } else {
      std::fprintf(stderr, "usage: failure leave|for|return|together\n");
      return 2;
    }
  } catch (std::exception const& e) {
    std::fprintf(stderr, "caught: %s\n", e.what());
    return 1;
  }
  return 0;
}
