#include <strata/error.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "commands.hpp"

namespace strata::cli {

namespace {
// Output is buffered: a failed write (ENOSPC on /dev/full, EPIPE) shows only at the flush,
// which would otherwise happen at exit, where its error is ignored.
int flush_stdout(char const* program) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return 0;
  std::fprintf(stderr, "%s: error: cannot write the output: %s\n", program, std::strerror(errno));
  return 1;
}
}  // namespace

int run(CLI::App& app, int argc, char** argv) {
  auto const program = app.get_name().c_str();
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    int const rc = app.exit(e);
    return flush_stdout(program) != 0 && rc == 0 ? 1 : rc;
  } catch (strata::error const& e) {
    flush_stdout(program);
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  } catch (std::exception const& e) {
    flush_stdout(program);
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return 3;
  }
  return flush_stdout(program);
}

}  // namespace strata::cli
