// Strata's diagnostics on stderr, filtered by STRATA_LOG (quiet, info, debug).
#pragma once

#include <string_view>

namespace strata::detail {

enum class log_level { quiet, info, debug };

/// The level from STRATA_LOG, read once; throws config_error for an unknown value.
log_level current_log_level();
void log(log_level level, std::string_view message);

}  // namespace strata::detail
