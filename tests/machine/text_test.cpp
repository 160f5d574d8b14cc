// lstopo-style text output.
#include <strata/machine/text.hpp>

#include <gtest/gtest.h>

#include "machine/example_machines.hpp"

namespace strata {
namespace {

TEST(Text, IndentsByDepthAndFoldsChains) {
  auto text = to_text(test::phalanx_fig1());
  EXPECT_EQ(text.rfind("Machine (128 GiB host memory)\n", 0), 0u) << text;
  EXPECT_NE(text.find("\n  Package 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    NUMA 0 (P#0, 64 GiB)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    Core 5 + PU 5 (P#5)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  cuda1 (cuda)\n"), std::string::npos) << text;
}

TEST(Text, FlatHasOnePlacePerLine) {
  auto m = test::phalanx_fig1();
  auto text = to_text(m, {.collapse = false});
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')),
            m.descendants().size());
  EXPECT_NE(text.find("\n      PU 5 (P#5)\n"), std::string::npos) << text;
}

TEST(Text, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(32 * 1024), "32 KiB");
  EXPECT_EQ(format_bytes(3 * 512 * 1024), "1.5 MiB");
  EXPECT_EQ(format_bytes(23ull << 30), "23 GiB");
}

}  // namespace
}  // namespace strata
