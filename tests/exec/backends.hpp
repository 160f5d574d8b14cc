// One kernel suite for every CPU backend (Kokkos' habit): a fixture parameterized over
// the backends this libstrata was built with.
#pragma once

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::test {

inline std::vector<backend_id> cpu_backends() {
  std::vector<backend_id> b{backend_id::serial, backend_id::threads};
  if (detail::openmp_built()) b.push_back(backend_id::openmp);
  return b;
}

/// A runtime per test (the fixture owns it) and the backend under test.
class on_every_backend : public testing::TestWithParam<backend_id> {
 protected:
  runtime rt;
  place machine = rt.machine();
  target here() const { return on(machine, GetParam()); }
  target on_first_pu() const { return on(machine.processors().front(), GetParam()); }
};

inline std::string backend_name(testing::TestParamInfo<backend_id> const& info) {
  return std::string(to_string(info.param));
}

}  // namespace strata::test
