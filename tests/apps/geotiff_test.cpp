// A GeoTIFF in a projected reference system through GDAL (issue 16: "any GeoTIFF/ASCII grid
// through GDAL"): written here with GDAL's own GTiff driver, read by apps::read_gdal as
// shortest_path reads a terrain. Built only where CMake found GDAL (tests/apps/CMakeLists.txt).
#include "terrain.hpp"

#include <gtest/gtest.h>

#include <gdal.h>
#include <ogr_srs_api.h>

#include <cpl_conv.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

TEST(HybridAppsTerrain, GdalReadsAGeoTiffInFeetWithAVoid) {
  ASSERT_TRUE(apps::have_gdal());
  auto const dir = std::filesystem::temp_directory_path() /
                   ("strata-geotiff-" + std::to_string(::getpid()));  // one per process
  std::filesystem::create_directories(dir);
  auto const path = (dir / "terrain.tif").string();
  int const rows = 4, cols = 5;
  std::int16_t const nodata = -32768;
  {
    GDALAllRegister();
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    ASSERT_NE(drv, nullptr);
    GDALDatasetH ds = GDALCreate(drv, path.c_str(), cols, rows, 1, GDT_Int16, nullptr);
    ASSERT_NE(ds, nullptr);
    // 100 US survey feet a cell in NAD83 / California zone 3 (ftUS), EPSG:2227: the cell
    // size in metres must come from the system's linear unit, not the raw spacing.
    double gt[6] = {6000000.0, 100.0, 0.0, 2000000.0, 0.0, -100.0};
    ASSERT_EQ(GDALSetGeoTransform(ds, gt), CE_None);
    OGRSpatialReferenceH srs = OSRNewSpatialReference(nullptr);
    ASSERT_EQ(OSRImportFromEPSG(srs, 2227), OGRERR_NONE);
    char* wkt = nullptr;
    OSRExportToWkt(srs, &wkt);
    EXPECT_EQ(GDALSetProjection(ds, wkt), CE_None);
    CPLFree(wkt);
    OSRDestroySpatialReference(srs);
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    ASSERT_EQ(GDALSetRasterNoDataValue(band, nodata), CE_None);
    std::vector<std::int16_t> z(static_cast<std::size_t>(rows * cols));
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        z[static_cast<std::size_t>(i * cols + j)] = static_cast<std::int16_t>(100 + 10 * i + j);
    z[1 * cols + 2] = nodata;  // a void, inside
    ASSERT_EQ(GDALRasterIO(band, GF_Write, 0, 0, cols, rows, z.data(), cols, rows, GDT_Int16, 0, 0),
              CE_None);
    GDALClose(ds);
  }
  auto const t = apps::read_gdal(path);
  ASSERT_EQ(t.rows, rows);
  ASSERT_EQ(t.cols, cols);
  EXPECT_NEAR(t.cell, 100.0 * 1200.0 / 3937.0, 1e-9);  // 100 US survey feet in metres
  EXPECT_EQ(t.at(0, 0), 100.0);                        // north (the first row) at row 0
  EXPECT_EQ(t.at(3, 4), 134.0);
  // The void: the mean of its eight neighbours, rows 0-2 and columns 1-3 but itself.
  EXPECT_DOUBLE_EQ(t.at(1, 2), (101 + 102 + 103 + 111 + 113 + 121 + 122 + 123) / 8.0);
  EXPECT_NE(t.what.find("GTiff"), std::string::npos) << t.what;
  std::filesystem::remove_all(dir);
}

}  // namespace
