#include "dist/direct.hpp"

#include <strata/error.hpp>

#include "dist/engine.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>

namespace strata::dist::detail {

namespace {

// The word every rank reads from another at start-up: the probe of cross-memory attach
// (a container's seccomp profile or Yama's ptrace scope may forbid it).
std::uint64_t volatile probe_word = 0x5374726174614443ull;

enum class direct_mode { off, read, map };

direct_mode wanted() {
  char const* v = std::getenv("STRATA_DIST_DIRECT");
  if (!v) return direct_mode::map;
  std::string const s(v);
  if (s == "0") return direct_mode::off;
  if (s == "1") return direct_mode::map;
  if (s == "read") return direct_mode::read;
  throw config_error("STRATA_DIST_DIRECT=\"" + s +
                     "\": expected 1 (access peers on this node directly, mapping their "
                     "arrays: the default), read (direct reads with process_vm_readv only) or "
                     "0 (always exchange messages)");
}

// The first page of a shared block's memory file: peers check what they mapped against
// the handle, and see the owner free the block (alive = 0) to drop their mapping.
// Private blocks (no memory file) have the header too: peers read its counters with
// process_vm_readv. `started` and `pulls_done` count the copies this block was the source
// of (written by its owner only): see copy_started.
struct block_header {
  std::uint64_t magic;
  std::uint64_t serial;
  std::atomic<std::uint32_t> alive;
  std::atomic<std::uint64_t> started;
  std::atomic<std::uint64_t> pulls_done;
};
constexpr std::uint64_t block_magic = 0x5374726174614231ull;
static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free,
              "the header's words are shared between processes");

std::size_t page_bytes() {
  static std::size_t const p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

std::atomic<std::uint64_t> next_serial{1};

// A peer's block mapped here (read-only), unmapped when the last user lets go.
struct peer_map {
  void* base = nullptr;
  std::size_t bytes = 0;
  bool writable = false;
  ~peer_map() {
    if (base) ::munmap(base, bytes);
  }
  block_header const& header() const { return *static_cast<block_header const*>(base); }
};

// The mappings of peers' blocks, by (world rank, serial), and the ranks whose blocks
// could not be mapped (their copies read with process_vm_readv instead).
struct peer_cache {
  std::mutex mutex;
  std::map<std::pair<int, std::uint64_t>, std::shared_ptr<peer_map>> maps;
  std::set<int> refused;

  // Drops the mappings of blocks their owners have freed (copies still reading one hold
  // their own reference), so a freed array's memory goes back to the system here too.
  void sweep() {
    for (auto it = maps.begin(); it != maps.end();)
      if (it->second->header().alive.load(std::memory_order_acquire) == 0)
        it = maps.erase(it);
      else
        ++it;
  }
};

peer_cache& cache() {
  static peer_cache c;
  return c;
}

}  // namespace

// A team of one has no peer to map its part: private memory serves it.
shared_block::shared_block(team const& t, std::size_t bytes)
    : shared_block(bytes, t.size() > 1 && direct_mapping(t), "dist::array") {}

shared_block::shared_block(std::size_t bytes, bool shared, char const* what) : bytes_(bytes) {
  // An empty part has its header too: its rank still reads from the peers in copies
  // from this array, and they wait for its count.
  // The header page on top of an absurd size would wrap to a small mapping.
  if (bytes > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) - page_bytes())
    throw out_of_memory(std::string(what) + ": could not allocate " + std::to_string(bytes) +
                        " bytes; expected at most PTRDIFF_MAX bytes less a page");
  std::size_t const total = page_bytes() + bytes;
  if (shared) {
    {
      auto& c = cache();
      std::lock_guard lock(c.mutex);
      c.sweep();
    }
    int const fd = ::memfd_create("strata-dist-array", MFD_CLOEXEC);
    if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(total)) == 0) {
      void* m = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) {
        map_ = m;
        fd_ = fd;
      }
    }
    // No memory file (a descriptor limit, a seccomp profile): private memory, which the
    // peers then read with process_vm_readv.
    if (!map_ && fd >= 0) ::close(fd);
  }
  if (!map_) {
    void* m = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      int const e = errno;
      throw out_of_memory(std::string(what) + ": could not allocate " + std::to_string(bytes) +
                          " bytes (" + std::strerror(e) + ")");
    }
    map_ = m;
    // Private memory may have huge pages (memory files may not: shmem_enabled is "never"
    // by default), which transposes and column passes use: they cross a page per row.
    // Measured on a 1024^2 and a 2048^2 complex FFT at one rank: transposes 5-10% faster.
    // (A hint: where transparent huge pages are off it does nothing.)
    ::madvise(m, total, MADV_HUGEPAGE);
  }
  map_bytes_ = total;
  serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
  new (map_) block_header{block_magic, serial_, {1}, {0}, {0}};
  data_ = static_cast<char*>(map_) + page_bytes();
}

void shared_block::release() noexcept {
  if (!map_) return;
  static_cast<block_header*>(map_)->alive.store(0, std::memory_order_release);
  if (fd_ >= 0) ::close(fd_);
  ::munmap(map_, map_bytes_);
  map_ = data_ = nullptr;
  map_bytes_ = bytes_ = 0;
  fd_ = -1;
}

shared_block::~shared_block() {
  release();
}

shared_block::shared_block(shared_block&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      data_(std::exchange(o.data_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      fd_(std::exchange(o.fd_, -1)),
      serial_(std::exchange(o.serial_, 0)) {}

shared_block& shared_block::operator=(shared_block&& o) noexcept {
  if (this != &o) {
    release();
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    fd_ = std::exchange(o.fd_, -1);
    serial_ = std::exchange(o.serial_, 0);
  }
  return *this;
}

std::uint64_t shared_block::copy_started() const noexcept {
  if (!map_) return 0;
  // The count in the header is only this block's number of copies (their readiness is
  // the copy's agreement, dist/array.hpp); `pulls_done` is what peers read.
  return static_cast<block_header*>(map_)->started.fetch_add(1, std::memory_order_acq_rel) + 1;
}

void shared_block::pulls_done() const noexcept {
  if (map_) static_cast<block_header*>(map_)->pulls_done.fetch_add(1, std::memory_order_release);
}

block_handle shared_block::handle() const noexcept {
  return {static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data_)), fd_, serial_};
}

std::uint64_t direct_count(long pid, block_handle const& h, void const* mapped_data,
                           block_count which) {
  auto pick = [which](block_header const& head) {
    return (which == block_count::started ? head.started : head.pulls_done)
        .load(std::memory_order_acquire);
  };
  if (mapped_data)
    return pick(*reinterpret_cast<block_header const*>(static_cast<char const*>(mapped_data) -
                                                       page_bytes()));
  // Not mapped here: read the header. The owner may have freed the block since (it can,
  // once its own copy completed, which needed this rank's count, so this rank's pulls
  // are done; but the count seen here may be from an earlier copy): a block that is
  // gone, or replaced by another at the same address, counts as done. (A source that is
  // gone counts as started: the read that follows fails with the reason.)
  block_header head;
  remote_run const run{static_cast<std::uintptr_t>(h.address - page_bytes()), sizeof head};
  iovec local{&head, sizeof head};
  iovec remote{reinterpret_cast<void*>(run.address), run.bytes};
  if (::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) !=
          static_cast<ssize_t>(sizeof head) ||
      head.magic != block_magic || head.serial != h.serial ||
      head.alive.load(std::memory_order_relaxed) == 0)
    return std::numeric_limits<std::uint64_t>::max();
  std::atomic_thread_fence(std::memory_order_acquire);
  return pick(head);
}

bool block_alive(void const* mapped_data) noexcept {
  auto const* head =
      reinterpret_cast<block_header const*>(static_cast<char const*>(mapped_data) - page_bytes());
  return head->alive.load(std::memory_order_acquire) != 0;
}

std::size_t mapped_peer_blocks() {
  auto& c = cache();
  std::lock_guard lock(c.mutex);
  return c.maps.size();
}

std::shared_ptr<void const> direct_map(long pid, int rank, block_handle const& h, bool writable) {
  auto& c = cache();
  std::lock_guard lock(c.mutex);
  c.sweep();
  auto const key = std::pair{rank, h.serial};
  auto it = c.maps.find(key);
  // (A block is mapped one way only: arrays read-only, dist::allocate's segments for
  // writing; a mismatch maps it again.)
  if (it != c.maps.end() && writable && !it->second->writable) {
    c.maps.erase(it);
    it = c.maps.end();
  }
  if (it == c.maps.end()) {
    if (c.refused.count(rank)) return nullptr;
    // The owner's descriptor, opened through /proc: allowed where process_vm_readv is
    // (same user, ptrace access), refused e.g. under a hidepid /proc.
    std::string const path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(h.fd);
    int const fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
      // Not allowed: read this rank with process_vm_readv from now on. (A descriptor that
      // is gone is this copy's problem only; it cannot be, as the owner waits for us.)
      if (errno == EACCES || errno == EPERM) c.refused.insert(rank);
      return nullptr;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < page_bytes()) {
      ::close(fd);
      return nullptr;
    }
    auto m = std::make_shared<peer_map>();
    m->bytes = static_cast<std::size_t>(st.st_size);
    // Populated at once: one pass over the page tables instead of a fault per page at
    // the first copy.
    void* base = ::mmap(nullptr, m->bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                        MAP_SHARED | MAP_POPULATE, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED) {
      c.refused.insert(rank);
      return nullptr;
    }
    m->base = base;
    m->writable = writable;
    auto const& head = m->header();
    // Not the block the handle names (it cannot be while its array lives, but a wrong
    // guess must not be read): fall back to process_vm_readv for this copy.
    if (head.magic != block_magic || head.serial != h.serial ||
        head.alive.load(std::memory_order_acquire) == 0)
      return nullptr;
    // A bounded cache: past a few hundred live blocks start again (users keep theirs).
    if (c.maps.size() >= 256) c.maps.clear();
    it = c.maps.emplace(key, std::move(m)).first;
  }
  auto const& m = it->second;
  return {m, static_cast<char const*>(m->base) + page_bytes()};
}

std::size_t page_size() {
  return page_bytes();
}

std::shared_ptr<void> direct_map_range(long pid, int rank, block_handle const& h,
                                       std::size_t offset, std::size_t n) {
  (void)rank;  // (named for symmetry with direct_map; a refusal is the caller's to handle)
  if (h.fd < 0 || offset % page_bytes() != 0) return nullptr;
  std::string const path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(h.fd);
  int const fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  // The header says whether this is the block the handle names (read, not mapped).
  block_header head{};
  struct stat st {};
  bool const right = ::pread(fd, &head, sizeof head, 0) == static_cast<ssize_t>(sizeof head) &&
                     head.magic == block_magic && head.serial == h.serial &&
                     head.alive.load(std::memory_order_relaxed) != 0 && ::fstat(fd, &st) == 0 &&
                     static_cast<std::size_t>(st.st_size) >= page_bytes() + offset + n;
  void* base = right ? ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                              static_cast<off_t>(page_bytes() + offset))
                     : MAP_FAILED;
  ::close(fd);
  if (base == MAP_FAILED) return nullptr;
  return std::shared_ptr<void>(base, [n](void* p) { ::munmap(p, n); });
}

direct_peers direct_setup(MPI_Comm comm, int rank, std::vector<std::string> hosts) {
  // The setting first: every rank reads the same environment, so a bad value fails them
  // all here, before any of them enters a collective.
  auto const mode = wanted();
  bool const want = mode != direct_mode::off;
  direct_peers p;
  p.hosts = std::move(hosts);
  auto const size = p.hosts.size();
  struct id {
    std::int64_t pid;
    std::uint64_t probe;
  };
  id const mine{static_cast<std::int64_t>(::getpid()),
                static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&probe_word))};
  std::vector<id> all(size);
  check_mpi(MPI_Allgather(&mine, sizeof(id), MPI_BYTE, all.data(), sizeof(id), MPI_BYTE, comm),
            "MPI_Allgather");
  p.pids.resize(size);
  for (std::size_t r = 0; r < size; ++r) p.pids[r] = static_cast<long>(all[r].pid);
  // Read the next rank on this node (round robin): one read per rank tells whether this
  // process may read its neighbours; a rank alone on its node has nothing to prove.
  int ok = want ? 1 : 0;
  auto const me = static_cast<std::size_t>(rank);
  for (std::size_t k = 1; ok && k < size; ++k) {
    auto const q = (me + k) % size;
    if (p.hosts[q] != p.hosts[me]) continue;
    std::uint64_t got = 0;
    iovec local{&got, sizeof got};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(all[q].probe)), sizeof got};
    ok = ::process_vm_readv(static_cast<pid_t>(all[q].pid), &local, 1, &remote, 1, 0) ==
                     static_cast<ssize_t>(sizeof got) &&
                 got == probe_word
             ? 1
             : 0;
    break;
  }
  int agreed = 0;
  check_mpi(MPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  p.usable = agreed == 1;
  p.map = p.usable && mode == direct_mode::map;
  return p;
}

void direct_read(long pid, int rank, std::span<remote_run const> runs, void* out) {
  constexpr std::size_t batch = IOV_MAX;
  std::vector<iovec> remote;
  remote.reserve(std::min(batch, runs.size()));
  auto* to = static_cast<char*>(out);
  for (std::size_t first = 0; first < runs.size(); first += batch) {
    std::size_t const n = std::min(batch, runs.size() - first);
    remote.clear();
    std::size_t total = 0;
    for (std::size_t k = first; k < first + n; ++k) {
      remote.push_back({reinterpret_cast<void*>(runs[k].address), runs[k].bytes});
      total += runs[k].bytes;
    }
    iovec local{to, total};
    ssize_t const got = ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, remote.data(), n, 0);
    if (got != static_cast<ssize_t>(total)) {
      // A partial read happens only at an unmapped page: the peer's array is gone.
      int const e = errno;
      throw error("dist: reading " + std::to_string(total) + " bytes of rank " +
                  std::to_string(rank) + "'s memory directly failed (" +
                  (got < 0 ? std::string(std::strerror(e)) : std::to_string(got) + " bytes read") +
                  "); set STRATA_DIST_DIRECT=0 to exchange messages instead");
    }
    to += total;
  }
}

}  // namespace strata::dist::detail
