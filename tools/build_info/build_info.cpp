#include "build_info.hpp"

#include <strata/config.hpp>

#include "build_commit.hpp"

namespace strata::build_info {

std::string commit() {
  return STRATA_GIT_COMMIT;
}
std::string compiler() {
  return STRATA_BUILD_COMPILER;
}
std::string build_type() {
  return STRATA_BUILD_TYPE;
}
std::string cxx_flags() {
  return STRATA_BUILD_CXX_FLAGS;
}
std::string strata_version() {
  return strata::version();
}

}  // namespace strata::build_info
