#include <strata/config.hpp>

namespace strata {

char const* version() noexcept {
  return STRATA_VERSION_STRING;
}

}  // namespace strata
