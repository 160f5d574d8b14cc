// STRATA_SIM_DEVICES parsing, good and bad input.
#include <strata/error.hpp>
#include <strata/machine/sim_config.hpp>

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(SimConfig, EmptyMeansNoDevices) {
  EXPECT_TRUE(parse_sim_devices("").empty());
  EXPECT_TRUE(parse_sim_devices("  ").empty());
  EXPECT_TRUE(parse_sim_devices("0").empty());
}

TEST(SimConfig, CountAloneGivesDefaults) {
  auto d = parse_sim_devices("2");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], sim_device_spec{});
  EXPECT_EQ(d[1], sim_device_spec{});
}

TEST(SimConfig, SettingsApplyToTheGroup) {
  auto d = parse_sim_devices("2:bw=12GB/s,lat=8us,speed=0.5");
  ASSERT_EQ(d.size(), 2u);
  for (auto const& s : d) {
    EXPECT_DOUBLE_EQ(s.bandwidth, 12e9);
    EXPECT_DOUBLE_EQ(s.latency, 8e-6);
    EXPECT_DOUBLE_EQ(s.speed, 0.5);
    EXPECT_EQ(s.memory, sim_device_spec{}.memory);
    EXPECT_EQ(s.units, 1u);
  }
}

TEST(SimConfig, GroupsAndUnits) {
  auto d = parse_sim_devices("1:mem=4GiB,units=4 ; 2:bw=900MiB/s,lat=1.5ms,speed=2");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].memory, 4ull << 30);
  EXPECT_EQ(d[0].units, 4u);
  EXPECT_DOUBLE_EQ(d[1].bandwidth, 900.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(d[1].latency, 1.5e-3);
  EXPECT_DOUBLE_EQ(d[2].speed, 2.0);
  EXPECT_DOUBLE_EQ(parse_sim_devices("1:lat=0s")[0].latency, 0.0);
  EXPECT_EQ(parse_sim_devices("1:mem=512MB")[0].memory, 512'000'000u);
}

TEST(SimConfig, ToStringParsesBack) {
  for (auto text :
       {"1", "1:bw=3GB/s,lat=250ns,speed=0.25,mem=1536MiB,units=3", "1:lat=2ms,mem=7B"}) {
    auto spec = parse_sim_devices(text).at(0);
    auto again = parse_sim_devices("1:" + to_string(spec)).at(0);
    EXPECT_EQ(spec, again) << text << " -> " << to_string(spec);
  }
}

// Each bad input must throw config_error naming the variable, the offending part and the
// accepted form.
struct bad_case {
  char const* text;
  char const* mentions;
};

class SimConfigBad : public testing::TestWithParam<bad_case> {};

TEST_P(SimConfigBad, IsAClearConfigError) {
  auto [text, mentions] = GetParam();
  try {
    parse_sim_devices(text);
    FAIL() << "accepted \"" << text << "\"";
  } catch (config_error const& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("STRATA_SIM_DEVICES=\"" + std::string(text) + "\""), std::string::npos)
        << msg;
    EXPECT_NE(msg.find(mentions), std::string::npos) << msg;
    EXPECT_NE(msg.find("Accepted form"), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, SimConfigBad,
    testing::Values(
        bad_case{"abc", "\"abc\" is not a device count"}, bad_case{"2:bw=-3", "bw=-3 is not valid"},
        bad_case{"2:bw=12", "bandwidth with a unit"},
        bad_case{"2:bw=12GB", "bandwidth with a unit"}, bad_case{"2:bw=nanGB/s", "bw=nanGB/s"},
        bad_case{"2:bw=infGB/s", "bw=infGB/s"}, bad_case{"2:lat=5", "time with a unit"},
        bad_case{"2:lat=-1us", "lat=-1us"}, bad_case{"2:speed=0", "at least 1e-6"},
        bad_case{"2:speed=fast", "speed=fast"},
        bad_case{"2:mem=0GiB", "positive whole number of bytes"}, bad_case{"2:units=0", "1 to 256"},
        bad_case{"2:units=1.5", "units=1.5"}, bad_case{"2:gpu=1", "unknown key \"gpu\""},
        bad_case{"2:bw", "\"bw\" is not a key=value"}, bad_case{"2:", "\"\" is not a key=value"},
        bad_case{"2;", "empty device group"}, bad_case{"-1", "\"-1\" is not a device count"},
        bad_case{"99999999999", "is not a device count"}, bad_case{"65", "more than the 64"},
        bad_case{"2 x", "\"2 x\" is not a device count"},
        // Beyond the bounds the emulation's times would overflow: a huge latency or a
        // tiny bandwidth or speed ran fast instead of slow.
        bad_case{
            "1:lat=1e10s",
            "lat=1e10s is not valid, expected a time with a unit (ns, us, ms, s) from 0 to 1e6s"},
        bad_case{"1:lat=1000001s", "from 0 to 1e6s"},
        bad_case{"1:bw=1e-30B/s", "bw=1e-30B/s is not valid, expected a bandwidth with a unit"},
        bad_case{"1:bw=0.5B/s", "GiB/s...) of at least 1B/s"},
        bad_case{"1:speed=1e-30", "speed=1e-30 is not valid, expected a factor of at least 1e-6"},
        bad_case{"1:speed=9e-7", "at least 1e-6"},
        // Fractional bytes are not rounded away.
        bad_case{"1:mem=1.5B", "mem=1.5B is not valid, expected a positive whole number of bytes"},
        bad_case{"1:mem=0.3KiB", "whole number of bytes"},
        // A key given twice is not silently overridden.
        bad_case{"1:bw=12GB/s,bw=1GB/s", "\"bw\" is given twice in one device group"},
        bad_case{"2:units=2;1:lat=1us, lat = 2us", "\"lat\" is given twice"}));

TEST(SimConfig, BoundsAreAccepted) {
  auto d = parse_sim_devices("1:lat=1e6s,bw=1B/s,speed=1e-6,mem=1.5KiB;1:bw=12GB/s");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[0].latency, sim_max_latency);
  EXPECT_DOUBLE_EQ(d[0].bandwidth, sim_min_bandwidth);
  EXPECT_DOUBLE_EQ(d[0].speed, sim_min_speed);
  EXPECT_EQ(d[0].memory, 1536u);
  // The same key in another group is not a repeat.
  EXPECT_DOUBLE_EQ(d[1].bandwidth, 12e9);
}

TEST(SimConfig, SourceIsNamed) {
  try {
    parse_sim_devices("x", "--sim-devices");
    FAIL();
  } catch (config_error const& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--sim-devices=\"x\"", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace strata
