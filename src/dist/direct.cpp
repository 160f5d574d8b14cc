#include "dist/direct.hpp"

#include <strata/error.hpp>

#include "dist/engine.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace strata::dist::detail {

namespace {

// The word every rank reads from another at start-up: the probe of cross-memory attach
// (a container's seccomp profile or Yama's ptrace scope may forbid it).
std::uint64_t volatile probe_word = 0x5374726174614443ull;

bool wanted() {
  char const* v = std::getenv("STRATA_DIST_DIRECT");
  if (!v) return true;
  std::string const s(v);
  if (s == "0") return false;
  if (s == "1") return true;
  throw config_error("STRATA_DIST_DIRECT=\"" + s +
                     "\": expected 1 (read peers on this node directly, the default) or 0 "
                     "(always exchange messages)");
}

}  // namespace

direct_peers direct_setup(MPI_Comm comm, int rank, std::vector<std::string> hosts) {
  // The setting first: every rank reads the same environment, so a bad value fails them
  // all here, before any of them enters a collective.
  bool const want = wanted();
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
