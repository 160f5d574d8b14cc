// Padding loads (Ripple §5.4, Figure 6): every padding cell of every block, after
// load_padding, against a reference computed on a plain array, for each boundary policy,
// in 1-3 dimensions, with uneven splits, sub-partitions and corners, on host and sim places.
#include "halo_check.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>

using namespace strata;
using tensor_test::check_padding;
using tensor_test::policy;

namespace {

class Padding : public ::testing::TestWithParam<std::string> {};

TEST_P(Padding, OneDimensionEveryPolicy) {
  for (auto pol : {policy::none, policy::constant, policy::copy, policy::reflect, policy::periodic,
                   policy::user})
    for (std::size_t parts : {1, 2, 5})
      for (std::size_t subs : {1, 2})
        for (index_t pad : {1, 2})
          check_padding<1>(
              GetParam(), pol,
              {.extent = {29}, .partitions = {parts}, .sub_partitions = {subs}, .padding = pad});
}

TEST_P(Padding, TwoDimensionsWithCornersEveryPolicy) {
  for (auto pol : {policy::none, policy::constant, policy::copy, policy::reflect, policy::periodic,
                   policy::user})
    for (auto parts : {std::array<std::size_t, 2>{1, 1}, {2, 3}, {3, 1}, {1, 4}})
      for (auto subs : {std::array<std::size_t, 2>{1, 1}, {2, 1}})
        for (index_t pad : {1, 2})
          check_padding<2>(
              GetParam(), pol,
              {.extent = {13, 11}, .partitions = parts, .sub_partitions = subs, .padding = pad});
}

TEST_P(Padding, ThreeDimensionsWithEdgesAndCornersEveryPolicy) {
  for (auto pol : {policy::none, policy::constant, policy::copy, policy::reflect, policy::periodic,
                   policy::user})
    for (auto parts : {std::array<std::size_t, 3>{1, 1, 1}, {2, 2, 2}, {1, 3, 1}})
      check_padding<3>(GetParam(), pol, {.extent = {7, 6, 5}, .partitions = parts, .padding = 1});
}

TEST_P(Padding, WeightedSplitsLoadTheSameHalos) {
  for (auto pol : {policy::reflect, policy::periodic})
    check_padding<2>(GetParam(), pol,
                     {.extent = {40, 9},
                      .partitions = {3, 1},
                      .padding = 2,
                      .weights = {std::vector<double>{1.0, 3.0, 0.5}, std::vector<double>{}}});
}

TEST_P(Padding, ChangingTheBoundaryAfterAnExchangeChangesTheHalos) {
  for (auto pol : {policy::periodic, policy::copy, policy::none})
    check_padding<2>(GetParam(), pol, {.extent = {13, 11}, .partitions = {2, 3}, .padding = 1},
                     true);
}

INSTANTIATE_TEST_SUITE_P(Places, Padding, ::testing::Values("host", "sim2", "sim4"));

}  // namespace
