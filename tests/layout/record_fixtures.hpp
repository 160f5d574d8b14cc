// Shared by the record-layout tests: a record of mixed sizes and alignments, values that
// tell element, field and component apart, and a fixture with two sim devices.
#pragma once

#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <cstdint>

namespace strata::test {

// Mixed sizes and alignments on purpose: a 1-byte field between 4- and 8-byte ones.
struct particle {
  struct position : field<float, 3> {};
  struct velocity : field<float, 3> {};
  struct alive : field<std::uint8_t> {};
  struct charge : field<double> {};
  struct id : field<std::int32_t> {};
  using fields = strata::fields<position, velocity, alive, charge, id>;

  template <class R>
  struct access : accessors<R> {
    STRATA_FN auto& x(std::size_t d) { return get<position>(*this, d); }
    STRATA_FN auto& v(std::size_t d) { return get<velocity>(*this, d); }
    STRATA_FN auto& q() { return get<charge>(*this); }
    STRATA_FN auto& ident() { return get<id>(*this); }
  };
};

// A value that tells element, field and component apart.
inline float pos_of(index_t i, std::size_t d) {
  return static_cast<float>(i) * 10.0f + static_cast<float>(d);
}

template <class A>
void fill_host(A& a) {
  for (index_t i = 0; i < a.size(); ++i) {
    auto r = a[i];
    for (std::size_t d = 0; d < 3; ++d) {
      r.x(d) = pos_of(i, d);
      r.v(d) = -pos_of(i, d);
    }
    r.template get<particle::alive>() = static_cast<std::uint8_t>(i % 3);
    r.q() = static_cast<double>(i) * 0.5;
    r.ident() = static_cast<std::int32_t>(1000 + i);
  }
}

template <class A>
void expect_filled(A const& a, char const* what) {
  for (index_t i = 0; i < a.size(); ++i) {
    auto r = a[i];
    for (std::size_t d = 0; d < 3; ++d) {
      ASSERT_EQ(r.x(d), pos_of(i, d)) << what << " element " << i << " position " << d;
      ASSERT_EQ(r.v(d), -pos_of(i, d)) << what << " element " << i << " velocity " << d;
    }
    ASSERT_EQ(r.template get<particle::alive>(), i % 3) << what << " element " << i;
    ASSERT_EQ(r.q(), static_cast<double>(i) * 0.5) << what << " element " << i;
    ASSERT_EQ(r.ident(), 1000 + i) << what << " element " << i;
  }
}

/// x += v * dt and id += 1 on every record of the kernel's range, with for_each_record
/// (vectorizable on AoSoA and on AoSoA field groups).
struct push_each {
  template <class Self, class P>
  STRATA_FN void operator()(Self const& self, P p, float dt) const {
    for_each_record(p, self.elements(p.size()), [dt](auto r) {
      for (std::size_t d = 0; d < 3; ++d) r.x(d) += r.v(d) * dt;
      r.ident() += 1;
    });
  }
};

class Records : public testing::Test {
 protected:
  runtime rt{runtime_options{.sim_devices = "2:bw=50GB/s,lat=1us"}};
  place machine = rt.machine();
  place sim0 = machine.slice(isa::sim).descendants(place_type::device)[0];
  place sim1 = machine.slice(isa::sim).descendants(place_type::device)[1];
};

}  // namespace strata::test
