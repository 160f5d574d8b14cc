// Machine descriptions as JSON: round trips and malformed documents.
#include <strata/error.hpp>
#include <strata/machine/discovery.hpp>
#include <strata/machine/json.hpp>

#include <gtest/gtest.h>

#include "machine/example_machines.hpp"

namespace strata {
namespace {

void expect_same_tree(place const& a, place const& b) {
  auto xs = a.descendants();
  auto ys = b.descendants();
  ASSERT_EQ(xs.size(), ys.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(xs[i].info(), ys[i].info()) << xs[i];
    EXPECT_EQ(xs[i].logical_index(), ys[i].logical_index()) << xs[i];
    EXPECT_EQ(xs[i].depth(), ys[i].depth()) << xs[i];
    EXPECT_EQ(xs[i].children().size(), ys[i].children().size()) << xs[i];
  }
}

TEST(Json, RoundTripOfThisMachineWithSims) {
  machine_options o;
  o.sim_devices = "2:bw=12GB/s,lat=8us,speed=0.5";
  auto m = discover_machine(o).machine;
  auto text = to_json(m);
  auto back = machine_from_json(text);
  expect_same_tree(m, back);
  EXPECT_FALSE(back.same_machine(m)) << "a loaded description is a machine of its own";
  EXPECT_EQ(to_json(back), text);
}

TEST(Json, RoundTripOfHandBuiltAndSlicedTrees) {
  auto m = test::phalanx_fig1();
  expect_same_tree(m, machine_from_json(to_json(m)));
  auto gpus = m.slice(isa::cuda);
  expect_same_tree(gpus, machine_from_json(to_json(gpus, {}, -1)));
}

TEST(Json, SummaryCountsForMachines) {
  machine_options o;
  o.sim_devices = "2";
  auto text = to_json(discover_machine(o).machine, {"a note"});
  EXPECT_NE(text.find("\"sim_devices\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"format\": \"strata-machine\""), std::string::npos);
  EXPECT_NE(text.find("\"a note\""), std::string::npos);
}

TEST(Json, BareNodeIsAccepted) {
  auto m = machine_from_json(R"({"type": "machine", "name": "M", "children": [
      {"type": "pu", "name": "PU 0", "os_index": 0}]})");
  EXPECT_EQ(m.processors().size(), 1u);
  EXPECT_EQ(m.processors()[0].os_index(), 0);
  EXPECT_EQ(m.processors()[0].isa(), isa::host) << "isa defaults to host";
}

struct bad_json {
  char const* text;
  char const* mentions;
};

class JsonBad : public testing::TestWithParam<bad_json> {};

TEST_P(JsonBad, IsAParseErrorWithAPath) {
  auto [text, mentions] = GetParam();
  try {
    machine_from_json(text);
    FAIL() << "accepted " << text;
  } catch (parse_error const& e) {
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Documents, JsonBad,
    testing::Values(
        bad_json{"{", "not valid JSON"}, bad_json{"[]", "expected an object"},
        bad_json{R"({"type": "gpu"})", "unknown place type \"gpu\""},
        bad_json{R"({"type": "pu", "kind": "memory"})", "contradicts"},
        bad_json{R"({"type": "machine", "isa": "x86"})", "unknown isa"},
        bad_json{R"({"type": "machine", "os_index": "zero"})", "machine.os_index"},
        bad_json{R"({"type": "machine", "children": {}})", "machine.children"},
        bad_json{
            R"({"type": "machine", "children": [{"type": "pu", "children": [{"type": "pu"}]}]})",
            "machine.children[0].children[0]"},
        bad_json{R"({"type": "machine", "attributes": {"a": 1}})", "machine.attributes.a"},
        bad_json{R"({"version": 7, "machine": {"type": "machine"}})", "version 7"},
        bad_json{R"({"version": "x", "machine": {"type": "machine"}})", "version"},
        bad_json{R"({"type": "host_memory", "capacity": -1})", "machine.capacity"},
        bad_json{R"({"type": "cache", "cache_level": 300})", "out of range"},
        bad_json{R"({"type": "pu", "os_index": 1e20})", "expected an integer"},
        bad_json{R"({"type": "device", "speed": -2})", "machine.speed"},
        bad_json{R"({"type": "device", "link": {"bandwidth": "fast"}})",
                 "machine.link.bandwidth"}));

TEST(Json, DeepTreesAreRejectedNotOverflowed) {
  std::string doc;
  for (int i = 0; i < 5000; ++i) doc += R"({"type": "group", "children": [)";
  doc += R"({"type": "pu"})";
  for (int i = 0; i < 5000; ++i) doc += "]}";
  EXPECT_THROW(machine_from_json(doc), parse_error);
}

}  // namespace
}  // namespace strata
