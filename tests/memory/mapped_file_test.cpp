// Mapped files (PARRAY §3.3 mmap): data written through the buffer reach the file,
// modes and sizes are checked, errors name the path.
#include <strata/strata.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace strata {
namespace {

namespace fs = std::filesystem;

bool contains(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

std::vector<char> read_file(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(fs::path const& p, std::string const& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// A fresh directory per test, removed afterwards.
class MappedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("strata_mapped_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path file(std::string const& name) const { return dir_ / name; }

  fs::path dir_;
};

TEST_F(MappedFile, WritesReachTheFileWhenTheBufferIsReleased) {
  runtime rt;
  auto path = file("data.bin");
  {
    auto b = map_file<std::uint32_t>(path, 1000, file_mode::create);
    EXPECT_EQ(b.size(), 1000);
    EXPECT_EQ(b.bytes(), 4000u);
    EXPECT_EQ(b.where().type(), place_type::host_memory);
    EXPECT_EQ(b.where(), rt.machine().memories().front());
    auto info = detail::find_allocation(b.data().get());
    ASSERT_TRUE(info);
    EXPECT_EQ(info->space, space_id::mapped);
    for (std::uint32_t i = 0; i < 1000; ++i) b(i) = 3 * i + 1;
  }
  EXPECT_EQ(fs::file_size(path), 4000u);
  auto bytes = read_file(path);
  ASSERT_EQ(bytes.size(), 4000u);
  for (std::uint32_t i = 0; i < 1000; ++i) {
    std::uint32_t v = 0;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    ASSERT_EQ(v, 3 * i + 1) << "element " << i;
  }

  {  // Reopened: the same data, and changes persist again.
    auto b = map_file<std::uint32_t>(path, 1000, file_mode::open);
    for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(b(i), 3 * i + 1);
    b(999) = 7;
    auto moved = std::move(b);  // released once, by the buffer that holds it last
    moved(0) = 9;
  }
  auto again = map_file<std::uint32_t>(path, 1000, file_mode::open);
  EXPECT_EQ(again(0), 9u);
  EXPECT_EQ(again(999), 7u);
  EXPECT_EQ(again(1), 4u);
}

TEST_F(MappedFile, CreateNeedsANewFileAndOpenAnExistingOne) {
  runtime rt;
  auto path = file("modes.bin");
  try {
    map_file<int>(path, 4, file_mode::open);
    FAIL() << "opened a missing file";
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
    EXPECT_TRUE(contains(e.what(), "does not exist")) << e.what();
    EXPECT_TRUE(contains(e.what(), "No such file")) << "errno text: " << e.what();
  }
  EXPECT_FALSE(fs::exists(path)) << "open creates nothing";

  map_file<int>(path, 4, file_mode::create)(2) = 42;
  try {
    map_file<int>(path, 4, file_mode::create);
    FAIL() << "created over an existing file";
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
    EXPECT_TRUE(contains(e.what(), "already exists")) << e.what();
  }
  auto b = map_file<int>(path, 4);  // create_or_open, the default, takes the existing file
  EXPECT_EQ(b(2), 42);
  auto fresh = map_file<int>(file("new.bin"), 2);  // ... or makes one (zero-filled)
  EXPECT_EQ(fresh(0), 0);
  EXPECT_EQ(fs::file_size(file("new.bin")), 2 * sizeof(int));
}

TEST_F(MappedFile, AShortFileIsAnErrorForOpenAndExtendedOtherwise) {
  runtime rt;
  auto path = file("short.bin");
  write_file(path, "0123456789");
  try {
    map_file<double>(path, 4, file_mode::open);
    FAIL() << "mapped 32 bytes of a 10-byte file";
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), "10 bytes")) << e.what();
    EXPECT_TRUE(contains(e.what(), "32 bytes")) << e.what();
    EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
  }
  EXPECT_EQ(fs::file_size(path), 10u) << "a failed open leaves the file alone";
  {
    auto b = map_file<char>(path, 32, file_mode::create_or_open);
    EXPECT_EQ(b(0), '0');
    EXPECT_EQ(b(9), '9');
    EXPECT_EQ(b(10), '\0') << "the extension is zeros";
  }
  EXPECT_EQ(fs::file_size(path), 32u);

  auto longer = file("long.bin");
  write_file(longer, std::string(100, 'x'));
  {
    auto b = map_file<char>(longer, 10, file_mode::open);
    b(0) = 'y';
  }
  EXPECT_EQ(fs::file_size(longer), 100u) << "only the start is mapped; the size stays";
  EXPECT_EQ(read_file(longer)[0], 'y');
}

TEST_F(MappedFile, BadArgumentsAndSystemErrorsNameThePath) {
  { EXPECT_THROW(map_file<int>(file("no_runtime.bin"), 1), error) << "needs a runtime"; }
  runtime rt;
  try {
    map_file<int>(file("zero.bin"), 0);
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), "zero.bin")) << e.what();
  }
  EXPECT_FALSE(fs::exists(file("zero.bin")));
  try {
    map_file<int>(dir_, 4);  // a directory
    FAIL();
  } catch (backend_error const& e) {
    EXPECT_TRUE(contains(e.what(), dir_.string())) << e.what();
    EXPECT_TRUE(contains(e.what(), "errno")) << e.what();
  }
  try {
    map_file<int>(file("missing_dir") / "x.bin", 4, file_mode::create);
    FAIL();
  } catch (backend_error const& e) {
    EXPECT_TRUE(contains(e.what(), "missing_dir")) << e.what();
    EXPECT_TRUE(contains(e.what(), "No such file")) << e.what();
  }
}

// A mapped buffer is host-accessible memory: host kernels write the file through it.
TEST_F(MappedFile, HostKernelsWriteThroughAMappedBuffer) {
  runtime rt;
  auto path = file("kernel.bin");
  {
    auto b = map_file<std::int64_t>(path, 4096, file_mode::create);
    launch(
        rt.machine(), divide_work(rt.machine(), 4096),
        [](auto const& self, std::int64_t* v, int n) {
          for (auto i : self.elements(n)) v[i] = 2 * static_cast<std::int64_t>(i);
        },
        b.data(), 4096)
        .wait();
  }
  auto bytes = read_file(path);
  ASSERT_EQ(bytes.size(), 4096 * sizeof(std::int64_t));
  std::int64_t last = 0;
  std::memcpy(&last, bytes.data() + 4095 * sizeof(std::int64_t), sizeof last);
  EXPECT_EQ(last, 2 * 4095);
}

}  // namespace
}  // namespace strata
