#include "log.hpp"

#include <strata/error.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace strata::detail {

log_level current_log_level() {
  char const* env = std::getenv("STRATA_LOG");
  std::string_view v = env ? env : "info";
  if (v == "quiet" || v == "0") return log_level::quiet;
  if (v == "info" || v.empty()) return log_level::info;
  if (v == "debug") return log_level::debug;
  throw config_error("STRATA_LOG=\"" + std::string(v) +
                     "\": unknown log level; expected quiet, info or debug");
}

void log(log_level level, std::string_view message) {
  log_level wanted = log_level::info;
  try {
    wanted = current_log_level();
  } catch (config_error const&) {
    // runtime::start() reports a bad STRATA_LOG; a message must never throw.
  }
  if (level == log_level::quiet || wanted < level) return;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "strata: %.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace strata::detail
