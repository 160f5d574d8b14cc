// `strata bench ...` runs strata-bench with the same arguments. The benchmarks link their
// peers (oneTBB, Kokkos, OpenBLAS, FFTW, ScaLAPACK, PETSc, cuBLAS) and are compiled for
// the build machine, so they live in a program of their own that `strata` does not link
// and an install leaves out unless asked (STRATA_INSTALL_BENCH).
#include <fmt/format.h>
#include <unistd.h>

#include <strata/error.hpp>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"

namespace strata::cli {

namespace fs = std::filesystem;

fs::path self_path() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw error("cannot find this program's path (/proc/self/exe): " + ec.message());
  return p;
}

fs::path find_bench_program() {
  auto const dir = self_path().parent_path();
  fs::path const tried[] = {dir / "strata-bench", dir / STRATA_LIBEXEC_RELATIVE / "strata-bench"};
  for (auto const& p : tried)
    if (::access(p.c_str(), X_OK) == 0) return p.lexically_normal();
  throw not_supported(fmt::format(
      "bench: the benchmarks are not part of this build or install (no {} or {}); build them "
      "with -DSTRATA_BUILD_BENCH=ON (and install them with -DSTRATA_INSTALL_BENCH=ON)",
      tried[0].string(), tried[1].lexically_normal().string()));
}

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Run a benchmark against its peer (strata bench --help, strata bench --list)");
  // Everything after `bench` is strata-bench's, --help included.
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([cmd] {
    auto const program = find_bench_program();
    std::vector<std::string> args{program.string()};
    for (auto const& a : cmd->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    ::execv(argv[0], argv.data());
    throw error(fmt::format("bench: could not start {}: {}", args[0], std::strerror(errno)));
  });
}

}  // namespace strata::cli
