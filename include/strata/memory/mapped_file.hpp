// Files mapped into memory (PARRAY §3.3, "Arrays of File Images (mmap)").
//
// PARRAY's `mmap` memory type maps a file with MAP_SHARED into the process: it is used like
// any host memory, pages are read from the disk on demand, and munmap writes the image
// back. Strata's `mapped_space` is that memory type; `map_file` makes a buffer of it whose
// destruction syncs the pages to the file (msync MS_SYNC), unmaps them and closes the
// file: the data are written back on release.
#pragma once

#include <strata/error.hpp>
#include <strata/memory/allocate.hpp>
#include <strata/memory/buffer.hpp>
#include <strata/memory/space.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>

namespace strata {

/// How map_file treats the file system.
enum class file_mode {
  open,           // the file must exist and hold at least the mapped bytes
  create,         // the file must not exist; it is created with the mapped size
  create_or_open  // either; a file shorter than the mapped bytes is extended (zeros)
};

namespace detail {
struct mapped_region {
  void* address;
  std::uint32_t place_id;
};
/// Maps the first `bytes` (> 0) of the file at `path` read/write and shared, and
/// registers the mapping as a space_id::mapped allocation whose release writes it back.
mapped_region map_file_bytes(std::filesystem::path const& path, std::size_t bytes, file_mode mode);
}  // namespace detail

/// A buffer of `n` (> 0) objects of T that are the first n * sizeof(T) bytes of the file
/// at `path`: writes through the buffer reach the file, at the latest when the buffer is
/// destroyed. `create` fails if the file exists, `open` if it does not or if it is
/// shorter than n * sizeof(T); `create` and `create_or_open` extend a shorter file with
/// zeros; a longer file keeps its size and only its start is mapped. The buffer's place
/// is the machine's first host memory (the kernel, not Strata, places the page cache).
///
/// Throws invalid_argument (n == 0, wrong mode for the file, file too short, not a
/// regular file) or backend_error (a failing system call), each naming the path and,
/// for system calls, the errno text. Another process truncating the file while it is
/// mapped makes accesses beyond the new end fault (SIGBUS), as with any mmap.
template <class T>
buffer<T, 1, mapped_space> map_file(std::filesystem::path const& path, std::size_t n,
                                    file_mode mode = file_mode::create_or_open) {
  static_assert(std::is_trivially_copyable_v<T>,
                "map_file: T must be trivially copyable (the file holds its bytes)");
  if (n == 0)
    throw invalid_argument("map_file: '" + path.string() +
                           "': 0 elements is invalid; expected at least 1 (a mapping is never "
                           "empty)");
  std::size_t const bytes = detail::bytes_for<T>(n);
  auto region = detail::map_file_bytes(path, bytes, mode);
  return buffer<T, 1, mapped_space>::adopt(
      ptr<T, mapped_space>(static_cast<T*>(region.address), region.place_id),
      vec<1>{static_cast<index_t>(n)}, bytes, bytes);
}

}  // namespace strata
