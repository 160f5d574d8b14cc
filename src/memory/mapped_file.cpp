// Mapping files into host memory (PARRAY §3.3 mmap): open or create, size, mmap, and a
// registry record whose release writes the image back (PARRAY's `$destroy` = munmap).
#include <strata/memory/mapped_file.hpp>
#include <strata/runtime.hpp>

#include "log.hpp"
#include "memory/registry.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

namespace strata::detail {
namespace {

std::string errno_text(int e) {
  return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")";
}

int open_retrying(char const* name, int flags) {
  int fd;
  do {
    fd = ::open(name, flags | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

[[noreturn]] void throw_open_error(std::string const& name, file_mode mode, int e) {
  if (mode == file_mode::create && e == EEXIST)
    throw invalid_argument(
        fmt::format("map_file: '{}' already exists ({}); file_mode::create expects a new file (use "
                    "file_mode::open or file_mode::create_or_open for an existing one)",
                    name, errno_text(e)));
  if (mode == file_mode::open && e == ENOENT)
    throw invalid_argument(fmt::format(
        "map_file: '{}' does not exist ({}); file_mode::open expects an existing file (use "
        "file_mode::create or file_mode::create_or_open to make one)",
        name, errno_text(e)));
  throw backend_error(fmt::format("map_file: open('{}', read/write{}) failed: {}", name,
                                  mode == file_mode::open ? "" : ", create", errno_text(e)));
}

// The first host memory of the live runtime's machine: where mapped buffers say they are.
place first_host_memory() {
  for (auto const& m : runtime::current().machine().memories())
    if (m.type() == place_type::host_memory) return m;
  throw not_supported(
      "map_file: this runtime's machine has no host memory place; expected at least one NUMA "
      "node to hold mapped files");
}

}  // namespace

mapped_region map_file_bytes(std::filesystem::path const& path, std::size_t bytes, file_mode mode) {
  auto const memory = first_host_memory();  // before touching the file system
  std::string const name = path.string();
  if (bytes > static_cast<std::size_t>(std::numeric_limits<off_t>::max()))
    throw invalid_argument(fmt::format(
        "map_file: '{}': {} bytes exceed the largest file size; expected at most {} bytes", name,
        bytes, std::numeric_limits<off_t>::max()));

  // create_or_open tries to create first, so that a failure later removes only a file
  // that this call created, never one that existed.
  bool created = false;
  int fd = -1;
  if (mode == file_mode::open) {
    fd = open_retrying(name.c_str(), O_RDWR);
  } else {
    for (int attempt = 0; fd < 0 && attempt < 3; ++attempt) {
      fd = open_retrying(name.c_str(), O_RDWR | O_CREAT | O_EXCL);
      created = fd >= 0;
      if (fd < 0 && errno == EEXIST && mode == file_mode::create_or_open)
        fd = open_retrying(name.c_str(), O_RDWR);  // ENOENT: removed meanwhile, try again
      if (fd < 0 && errno != ENOENT && errno != EEXIST) break;
      if (mode == file_mode::create) break;
    }
  }
  if (fd < 0) throw_open_error(name, mode, errno);

  void* address = MAP_FAILED;
  auto fail = [&](auto&& exception) {
    if (address != MAP_FAILED) ::munmap(address, bytes);
    ::close(fd);
    if (created) ::unlink(name.c_str());
    throw exception;
  };

  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail(backend_error(fmt::format("map_file: fstat('{}') failed: {}", name, errno_text(errno))));
  if (!S_ISREG(st.st_mode))
    fail(invalid_argument(
        fmt::format("map_file: '{}' is not a regular file; expected a file to map", name)));
  auto const size = static_cast<std::size_t>(st.st_size);
  if (size < bytes) {
    if (mode == file_mode::open)
      fail(invalid_argument(fmt::format(
          "map_file: '{}' holds {} bytes, fewer than the {} bytes to map; file_mode::open "
          "expects a file at least that large (file_mode::create_or_open extends it)",
          name, size, bytes)));
    int rc;
    do {
      rc = ::ftruncate(fd, static_cast<off_t>(bytes));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0)
      fail(backend_error(fmt::format("map_file: ftruncate('{}', {} bytes) failed: {}", name, bytes,
                                     errno_text(errno))));
  }

  address = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED)
    fail(backend_error(fmt::format("map_file: mmap('{}', {} bytes, read/write, shared) failed: {}",
                                   name, bytes, errno_text(errno))));

  // Written back on release: msync(MS_SYNC) so that the data are in the file when the
  // buffer's destructor returns (munmap alone only schedules the write-back).
  auto release = [fd, name](void* p, std::size_t n) {
    if (::msync(p, n, MS_SYNC) != 0)
      log(log_level::info,
          fmt::format("map_file: msync('{}') failed while releasing the mapping: {}; the file "
                      "may miss the last writes",
                      name, errno_text(errno)));
    ::munmap(p, n);
    ::close(fd);
  };
  try {
    register_allocation(address, {bytes, space_id::mapped, memory.id(), current_machine_key(),
                                  false, std::move(release)});
  } catch (std::bad_alloc const&) {
    fail(out_of_memory(
        fmt::format("map_file: no memory to record the mapping of '{}' ({} bytes)", name, bytes)));
  }
  return {address, memory.id()};
}

}  // namespace strata::detail
