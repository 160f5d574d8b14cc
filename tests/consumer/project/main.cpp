// A minimal Strata program, built the way a user builds one.
#include <strata/strata.hpp>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) try {
  strata::runtime rt(argc, argv);
  auto machine = rt.machine();
  auto cpus = machine.slice(strata::isa::host).processors();
  auto sims = machine.slice(strata::isa::sim).processors();
  std::printf("strata %s: %zu host processors, %zu sim processors\n", strata::version(),
              cpus.size(), sims.size());
  if (std::strcmp(strata::version(), strata::header_version) != 0) return 2;
  return cpus.empty() || sims.size() != 1 ? 1 : 0;
} catch (strata::error const& e) {
  std::fprintf(stderr, "consumer: %s\n", e.what());
  return 1;
}
