// The hybrid stencil apps' code (apps/common: kernels, terrains, pictures, tables, path
// tracing; hybrid-2d-stencil-scheme §2, §7, §8): both solver paths on every device mix and
// cut choice against their references (sequential sweeps bitwise, Dijkstra), bad inputs as
// clear errors, PNG files that decode to the right size, the tables' arithmetic with a
// model timer (no timing in the checks).
#include "hybrid_tables.hpp"
#include "render.hpp"
#include "stencil_kernels.hpp"
#include "terrain.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace strata;

namespace {

runtime& rt() {
  static runtime r{runtime_options{.sim_devices = "3:units=2,lat=2us,bw=20GB/s"}};
  return r;
}

std::vector<place> mix(std::string const& name) {
  auto devices = apps::hybrid_devices(rt().machine());  // cpu, sim0, sim1, sim2
  if (name == "cpu") return {devices[0].where};
  if (name == "cpu+sim") return {devices[0].where, devices[1].where};
  if (name == "cpu+2sim") return {devices[1].where, devices[0].where, devices[2].where};
  return {devices[1].where, devices[2].where};  // "2sim"
}

/// The cut choices of a mix: even strips, the tables' optimal cuts for made-up speeds,
/// one-row strips at the edges.
std::vector<std::vector<index_t>> cut_choices(std::size_t n, index_t rows) {
  if (n == 1) return {{}};
  std::vector<std::vector<index_t>> out{{}};
  std::vector<double> speeds;
  for (std::size_t k = 0; k < n; ++k) speeds.push_back(1.0 + 2.0 * static_cast<double>(k));
  out.push_back(apps::optimal_cuts(rows, speeds));
  if (n == 2) out.push_back({1}), out.push_back({rows - 1});
  if (n == 3) out.push_back({1, 2}), out.push_back({rows - 2, rows - 1});
  return out;
}

std::filesystem::path temp_dir() {
  auto d =
      std::filesystem::temp_directory_path() /
      ("strata-hybrid-apps-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(d);
  return d;
}

class HybridApps : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridApps, JacobiSolverEqualsSequentialSweepsForEveryCut) {
  rt();
  index_t const rows = 33, cols = 21;
  auto devices = mix(GetParam());
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 29) % 13);
  for (auto const& cuts : cut_choices(devices.size(), rows)) {
    hybrid_stencil<double> h({rows, cols}, {.devices = devices,
                                            .cuts = cuts,
                                            .boundary = 1.0,
                                            .tolerance = 1e-2,
                                            .max_iterations = 5000});
    h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
    auto r = h.solve(apps::jacobi_update{});
    EXPECT_TRUE(r.converged);
    std::vector<double> out(init.size());
    h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
    auto ref = apps::jacobi_reference(init, rows, cols, 1.0, r.iterations);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], ref[i]) << GetParam() << " cuts " << ::testing::PrintToString(cuts)
                                << " cell " << i;
  }
}

TEST_P(HybridApps, ShortestPathSolverEqualsDijkstraAndPathsReachTheTarget) {
  rt();
  auto land = apps::fractal_terrain(29, 23, 7, 500.0, 30.0);
  index_t const rows = land.rows, cols = land.cols, ti = 20, tj = 4;
  double const inf = std::numeric_limits<double>::infinity();
  auto devices = mix(GetParam());
  auto ref = apps::dijkstra(land.z, rows, cols, land.cell, ti, tj);
  for (auto const& cuts : cut_choices(devices.size(), rows)) {
    hybrid_stencil<double> h({rows, cols}, {.devices = devices, .cuts = cuts, .boundary = inf});
    std::vector<double> cost(land.z.size(), inf);
    cost[static_cast<std::size_t>(ti * cols + tj)] = 0;
    h.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
    tensor<double, 2> z(h.devices(), h.spec());
    set_boundary(z, boundary::constant<double>{0.0});
    copy(z, view<double, 2>(ptr<double, host_space>(land.z.data(), 0), vec<2>{rows, cols})).wait();
    auto r = h.solve(apps::path_update{}, z, land.cell);
    EXPECT_TRUE(r.converged);
    h.get(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
    for (std::size_t i = 0; i < cost.size(); ++i)
      ASSERT_NEAR(cost[i], ref[i], 1e-12 * ref[i])
          << GetParam() << " cuts " << ::testing::PrintToString(cuts) << " cell " << i;
    // From every corner, the path descends to the target, its steps adding up to the cost.
    for (std::pair<index_t, index_t> from :
         {std::pair<index_t, index_t>{0, 0}, {0, cols - 1}, {rows - 1, 0}, {rows - 1, cols - 1}}) {
      auto path = apps::trace_path(cost, land.z, rows, cols, land.cell, from);
      ASSERT_EQ(path.back(), (std::pair<index_t, index_t>{ti, tj}));
      double sum = 0;
      for (std::size_t k = 1; k < path.size(); ++k) {
        auto [a, b] = path[k - 1];
        auto [c, d] = path[k];
        sum += apps::step_cost(static_cast<int>(c - a), static_cast<int>(d - b), land.cell,
                               land.at(c, d) - land.at(a, b));
      }
      EXPECT_NEAR(sum, cost[static_cast<std::size_t>(from.first * cols + from.second)], 1e-9 * sum);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, HybridApps,
                         ::testing::Values("cpu", "cpu+sim", "cpu+2sim", "2sim"));

TEST(HybridAppsErrors, CutsOutsideTheGridAndEmptyStripsAreClearErrors) {
  rt();
  auto d = mix("cpu+2sim");
  for (std::vector<index_t> cuts : {std::vector<index_t>{0, 5}, {5, 5}, {5, 20}, {-1, 4}, {7, 3}})
    EXPECT_THROW(hybrid_stencil<double>({20, 8}, {.devices = d, .cuts = cuts}), invalid_argument)
        << ::testing::PrintToString(cuts);
  try {
    hybrid_stencil<double>({20, 8}, {.devices = d, .cuts = {5, 5}});
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("cut line 5"), std::string::npos) << e.what();
  }
}

// Fewer rows than devices: a clear error before any table or solve (std::clamp with
// hi < lo was undefined and gave "cut line -2 outside (0, 2)" after the tables).
TEST(HybridAppsErrors, FewerRowsThanDevicesIsAClearError) {
  rt();
  auto const four = apps::hybrid_devices(rt().machine());  // cpu, sim0, sim1, sim2
  ASSERT_EQ(four.size(), 4u);
  EXPECT_NO_THROW(apps::check_strips(4, four, "grid"));
  try {
    apps::check_strips(2, four, "the 2 x 100 grid");
    ADD_FAILURE() << "accepted 2 rows for 4 devices";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("the 2 x 100 grid: 2 rows are fewer than the 4 devices"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)apps::optimal_cuts(2, {1, 1, 1, 1, 1}), invalid_argument);
  EXPECT_EQ(apps::optimal_cuts(5, {1, 1, 1, 1, 1}), (std::vector<index_t>{1, 2, 3, 4}));
}

// Fractal sides beyond fractal_limit are refused (a side near 2^62 looped forever
// doubling its power of two; 3037000500 asked for 74 EB).
TEST(HybridAppsErrors, OversizedFractalIsAClearError) {
  EXPECT_THROW((void)apps::fractal_terrain(apps::fractal_limit + 1, 2, 1, 100), invalid_argument);
  EXPECT_THROW((void)apps::fractal_terrain(4611686018427387906, 4611686018427387906, 1, 100),
               invalid_argument);
}

// --cuts: the rows where strips 2, 3, ... start; anything else names what was expected.
TEST(HybridAppsErrors, CutLinesFromTheCommandLineAreCheckedWithClearErrors) {
  EXPECT_EQ(apps::parse_cuts("10,30", 48, 3), (std::vector<index_t>{10, 30}));
  EXPECT_EQ(apps::parse_cuts("47", 48, 2), (std::vector<index_t>{47}));
  auto message = [](std::string const& text, index_t rows, std::size_t devices) {
    try {
      (void)apps::parse_cuts(text, rows, devices);
    } catch (invalid_argument const& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("10", 48, 3).find("1 cut lines for 3 devices"), std::string::npos);
  EXPECT_NE(message("30,10", 48, 3).find("rows must increase"), std::string::npos);
  EXPECT_NE(message("20,20", 48, 3).find("rows must increase"), std::string::npos);
  EXPECT_NE(message("0,30", 48, 3).find("outside the grid's inner rows"), std::string::npos);
  EXPECT_NE(message("10,48", 48, 3).find("outside the grid's inner rows"), std::string::npos);
  for (char const* bad : {"", "10,", ",10", "10,,30", "+10,30", " 10,30", "10,x", "1e1,30",
                          "99999999999999999999,30"})
    EXPECT_NE(message(bad, 48, 3).find("is not a row"), std::string::npos) << bad;
  EXPECT_EQ(message("10,30", 48, 3), "no error");
  EXPECT_NE(message("10", 48, 1).find("no cut line to give"), std::string::npos);
  // The message says what is expected, with an example for this grid.
  EXPECT_NE(message("x", 48, 3).find("expected 2 increasing row numbers in 1..47"),
            std::string::npos);
  EXPECT_NE(message("x", 48, 3).find("e.g. --cuts 16,32"), std::string::npos);
}

TEST(HybridAppsErrors, MissingAndWrongSizedHgtFilesAreClearErrors) {
  auto dir = temp_dir();
  auto missing = (dir / "N45E006.hgt").string();
  try {
    apps::read_hgt(missing);
    FAIL() << "no error";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  auto bad = (dir / "N45E007.hgt").string();
  std::ofstream(bad, std::ios::binary) << std::string(1000, '\0');
  try {
    apps::read_hgt(bad);
    FAIL() << "no error";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("1000 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(apps::read_hgt_mosaic({bad, (dir / "tile.hgt").string()}), invalid_argument);
  EXPECT_THROW(apps::read_hgt_mosaic({}), invalid_argument);
  std::filesystem::remove_all(dir);
}

/// Writes a 1201^2 SRTM3 tile whose sample (i, j) is base + i - j (voids where asked).
void write_tile(std::string const& path, int base, bool with_void = false) {
  std::vector<unsigned char> raw(2 * 1201 * 1201);
  for (int i = 0; i < 1201; ++i)
    for (int j = 0; j < 1201; ++j) {
      int v = base + i - j;
      if (with_void && i == 10 && j == 10) v = -32768;
      auto u = static_cast<std::uint16_t>(static_cast<std::int16_t>(v));
      auto k = 2 * static_cast<std::size_t>(i * 1201 + j);
      raw[k] = static_cast<unsigned char>(u >> 8), raw[k + 1] = static_cast<unsigned char>(u & 255);
    }
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<char const*>(raw.data()), static_cast<std::streamsize>(raw.size()));
}

TEST(HybridAppsTerrain, HgtTilesAreBigEndianAndMosaicked) {
  auto dir = temp_dir();
  auto west = (dir / "N45E006.hgt").string(), east = (dir / "N45E007.hgt").string();
  write_tile(west, -500, true);
  write_tile(east, -500 - 1200);  // continues the west tile: its column 0 is west's 1200
  auto t = apps::read_hgt(west);
  ASSERT_EQ(t.rows, 1201);
  EXPECT_EQ(t.cell, 90.0);
  EXPECT_EQ(t.at(0, 0), -500);
  EXPECT_EQ(t.at(3, 700), -500 + 3 - 700);  // negative samples: big-endian two's complement
  EXPECT_EQ(t.at(10, 10), -500);            // a void: the mean of its neighbours
  auto m = apps::read_hgt_mosaic({east, west});
  ASSERT_EQ(m.rows, 1201);
  ASSERT_EQ(m.cols, 2401);  // the shared column once
  for (index_t j : {0, 1199, 1200, 1201, 2400}) EXPECT_EQ(m.at(5, j), -500 + 5 - j) << j;
  // Tiles must fill a rectangle.
  auto far = (dir / "N46E008.hgt").string();
  write_tile(far, 0);
  EXPECT_THROW(apps::read_hgt_mosaic({west, east, far}), invalid_argument);
  std::filesystem::remove_all(dir);
}

// A 2 x 2 mosaic, tiles given in no particular order: the northern tiles on top, a tile's
// last row (and last column) shared with the first of the tile south (east) of it. Every
// tile continues its neighbours, so the mosaic is row - column everywhere.
TEST(HybridAppsTerrain, HgtTilesMosaicNorthSouthAndEastWest) {
  auto dir = temp_dir();
  auto tile = [&](char const* name) { return (dir / name).string(); };
  write_tile(tile("N46E006.hgt"), 0);
  write_tile(tile("N46E007.hgt"), -1200);
  write_tile(tile("N45E006.hgt"), 1200);
  write_tile(tile("N45E007.hgt"), 0);
  auto m = apps::read_hgt_mosaic(
      {tile("N45E007.hgt"), tile("N46E006.hgt"), tile("N45E006.hgt"), tile("N46E007.hgt")});
  ASSERT_EQ(m.rows, 2401);
  ASSERT_EQ(m.cols, 2401);
  for (index_t i : {0, 1, 1199, 1200, 1201, 2400})
    for (index_t j : {0, 1199, 1200, 1201, 2400}) EXPECT_EQ(m.at(i, j), i - j) << i << ", " << j;
  std::filesystem::remove_all(dir);
}

// Rasters through GDAL (tools/install-deps.sh's test set installs libgdal-dev, so CI runs
// the first two): an ASCII grid with a no-data sample and a projected cell size; a grid in
// degrees; files GDAL cannot read. Without GDAL the call is a not_supported error.
void write_asc(std::string const& path, double cellsize, std::string const& rows) {
  std::ofstream f(path);
  f.precision(17);
  f << "ncols 4\nnrows 3\nxllcorner 6.0\nyllcorner 45.0\ncellsize " << cellsize
    << "\nNODATA_value -9999\n"
    << rows;
}

TEST(HybridAppsTerrain, GdalReadsAsciiGridsWithVoidsAndCellSizes) {
  auto dir = temp_dir();
  auto grid = (dir / "grid.asc").string();
  write_asc(grid, 25, "1 2 3 4\n5 -9999 7 8\n9 10 11 12\n");
  if (!apps::have_gdal()) {
    EXPECT_THROW((void)apps::read_gdal(grid), not_supported);
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "this build has no GDAL";
  }
  auto t = apps::read_gdal(grid);
  ASSERT_EQ(t.rows, 3);
  ASSERT_EQ(t.cols, 4);
  EXPECT_EQ(t.cell, 25.0);
  EXPECT_EQ(t.at(0, 0), 1.0);  // north (the file's first line) at row 0
  EXPECT_EQ(t.at(2, 3), 12.0);
  // The void: the mean of its eight neighbours.
  EXPECT_DOUBLE_EQ(t.at(1, 1), (1 + 2 + 3 + 5 + 7 + 9 + 10 + 11) / 8.0);
  EXPECT_NE(t.what.find("AAIGrid"), std::string::npos) << t.what;
  // Three arc-seconds with no reference system: degrees, about 92.8 m north-south.
  auto deg = (dir / "deg.asc").string();
  write_asc(deg, 1.0 / 1200, "1 2 3 4\n5 6 7 8\n9 10 11 12\n");
  EXPECT_NEAR(apps::read_gdal(deg).cell, 111320.0 / 1200, 1e-6);
  std::filesystem::remove_all(dir);
}

TEST(HybridAppsErrors, RastersGdalCannotReadAreClearErrors) {
  if (!apps::have_gdal()) GTEST_SKIP() << "this build has no GDAL";
  auto dir = temp_dir();
  auto missing = (dir / "missing.tif").string();
  try {
    (void)apps::read_gdal(missing);
    FAIL() << "no error";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  auto junk = (dir / "junk.tif").string();
  std::ofstream(junk) << "not a raster";
  EXPECT_THROW((void)apps::read_gdal(junk), invalid_argument);
  auto thin = (dir / "thin.asc").string();  // one row: no grid to solve on
  std::ofstream(thin) << "ncols 3\nnrows 1\nxllcorner 0\nyllcorner 0\ncellsize 10\n1 2 3\n";
  try {
    (void)apps::read_gdal(thin);
    FAIL() << "no error";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("1 x 3"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(HybridAppsTerrain, FractalTerrainIsSeededAndSpansItsRelief) {
  auto a = apps::fractal_terrain(40, 70, 3, 1000.0);
  auto b = apps::fractal_terrain(40, 70, 3, 1000.0);
  auto c = apps::fractal_terrain(40, 70, 4, 1000.0);
  EXPECT_EQ(a.z, b.z);
  EXPECT_NE(a.z, c.z);
  EXPECT_EQ(*std::min_element(a.z.begin(), a.z.end()), 0.0);
  EXPECT_EQ(*std::max_element(a.z.begin(), a.z.end()), 1000.0);
  auto d = apps::downsample(a, 3);
  EXPECT_EQ(d.rows, 14);
  EXPECT_EQ(d.cols, 24);
  EXPECT_EQ(d.at(2, 5), a.at(6, 15));
  EXPECT_THROW(apps::fractal_terrain(1, 5, 0), invalid_argument);
}

TEST(HybridAppsPictures, WrittenPngsDecodeToTheirSize) {
  auto dir = temp_dir();
  auto land = apps::fractal_terrain(37, 53, 11);
  auto cost = apps::dijkstra(land.z, land.rows, land.cols, land.cell, 18, 26);
  auto shade = apps::hillshade(land);
  apps::draw_contours(shade, cost, 200.0);
  apps::draw_path(shade, apps::trace_path(cost, land.z, land.rows, land.cols, land.cell, {0, 0}),
                  255, 0, 0);
  auto path = (dir / "terrain.png").string();
  apps::write_png(path, shade);
  auto back = apps::read_png(path);
  EXPECT_EQ(back.width, 53);
  EXPECT_EQ(back.height, 37);
  EXPECT_EQ(back.rgb, shade.rgb);
  auto pic = apps::cost_picture(cost, land.rows, land.cols);
  apps::write_png((dir / "cost.png").string(), pic);
  EXPECT_EQ(apps::read_png((dir / "cost.png").string()).rgb, pic.rgb);
  EXPECT_THROW(apps::read_png((dir / "none.png").string()), strata::error);
  std::ofstream(dir / "fake.png") << "not a picture";
  EXPECT_THROW(apps::read_png((dir / "fake.png").string()), strata::error);
  EXPECT_THROW(apps::write_png((dir / "no" / "such" / "dir.png").string(), pic), strata::error);
  std::filesystem::remove_all(dir);
}

// The tables with a model timer: a run takes as long as its slowest strip (rows / speed),
// so every gain is known in advance.
TEST(HybridAppsTables, GainsFollowTheModel) {
  rt();
  auto all = apps::hybrid_devices(rt().machine());
  std::vector<apps::hybrid_device> devices(all.begin(), all.begin() + 3);
  std::vector<double> const speed{1.0, 2.0, 1.0};  // rows per second
  auto index = [&](place const& p) {
    for (std::size_t k = 0; k < devices.size(); ++k)
      if (devices[k].where == p) return k;
    return std::size_t{99};
  };
  index_t const rows = 64;
  apps::table_setup setup{rows, 10, 1, 4};
  std::FILE* out = std::tmpfile();
  auto speeds = apps::print_seed_tables(
      out, devices, setup, [&](std::vector<place> const& where, std::vector<index_t> const& cuts) {
        double t = 0;
        index_t prev = 0;
        for (std::size_t s = 0; s < where.size(); ++s) {
          index_t const next = s < cuts.size() ? cuts[s] : rows;
          t = std::max(t, static_cast<double>(next - prev) / speed[index(where[s])]);
          prev = next;
        }
        return t;
      });
  ASSERT_EQ(speeds.size(), 3u);
  EXPECT_DOUBLE_EQ(speeds[1] / speeds[0], 2.0);
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text += static_cast<char>(c);
  std::fclose(out);
  // Relative powers 25% / 50% / 25%; cpu+sim0 at the optimal cut (21 | 43 rows) takes
  // 21.5 s instead of sim0's 32: a gain of 48.84%; the triple sim0-cpu-sim1 at its optimum
  // (32 | 16 | 16 rows) takes 16 s: 100% over sim0.
  EXPECT_NE(text.find("25.00%"), std::string::npos) << text;
  EXPECT_NE(text.find("50.00%"), std::string::npos) << text;
  EXPECT_NE(text.find("48.84%"), std::string::npos) << text;
  EXPECT_NE(text.find("100.00%"), std::string::npos) << text;
  EXPECT_NE(text.find("Table 3"), std::string::npos) << text;
}

TEST(HybridAppsTables, SlowDownFlagsAreChecked) {
  rt();
  auto devices = apps::hybrid_devices(rt().machine());
  auto s = apps::parse_slow_down("sim1@50=0.25", devices);
  EXPECT_EQ(s.device, "sim1");
  EXPECT_EQ(s.iteration, 50);
  EXPECT_EQ(s.speed, 0.25);
  for (std::string const& bad : std::vector<std::string>{
           "sim1", "sim1@x=1", "sim1@5=0", "sim9@5=0.5", "sim1@5=", devices[0].name + "@1=0.5"})
    EXPECT_THROW(apps::parse_slow_down(bad, devices), invalid_argument) << bad;
  EXPECT_EQ(apps::parse_cell("--from", "3,4"), (std::pair<index_t, index_t>{3, 4}));
  EXPECT_THROW(apps::parse_cell("--from", "3"), invalid_argument);
  EXPECT_THROW(apps::parse_cell("--from", "3,x"), invalid_argument);
}

}  // namespace
