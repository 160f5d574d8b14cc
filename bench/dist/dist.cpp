// Distributed benchmarks (docs/dist.md), run under mpiexec by `strata bench --ranks N`:
//
// dist-latency   rank 0 against rank 1: a remote async round trip (an empty function
//                object) against an MPI_Send/MPI_Recv ping-pong of 8 bytes, and 8-byte
//                put/get (completion waited for each time, 20,000 per timed run)
//                against MPI_Put/MPI_Get + MPI_Win_flush on a passive-target window.
// dist-bandwidth put/get of 1 KiB .. 64 MiB against MPI_Put/MPI_Get + flush (each timed
//                run ends with the same MPI_Barrier on both sides).
//
// On one node Strata's put/get/atomics are memory copies into the peer's segment mapped
// here (docs/dist.md "Put and get on one node"); STRATA_DIST_DIRECT=0 measures messages.
//
// Every rank runs the same sequence (compare() is deterministic), ranks other than 0
// serve or wait in a barrier of their own side; only rank 0 reports. Outside mpiexec, or
// with one rank, they are skipped with a note (`strata bench all` runs one process).
#include <strata/dist.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"

namespace strata::bench {
namespace {

struct nothing {
  void operator()() const {}
};

// Rank 0 reports; the others stay silent.
bool start(context& ctx, char const* name, int& rank, int& size) {
  if (!dist::launched_by_mpi()) {
    ctx.skip(name, "needs MPI ranks: run `strata bench --ranks 2 " + std::string(name) + "`");
    return false;
  }
  char const* r = std::getenv("OMPI_COMM_WORLD_RANK");
  char const* s = std::getenv("OMPI_COMM_WORLD_SIZE");
  rank = r ? std::atoi(r) : 0;
  size = s ? std::atoi(s) : 1;
  if (size < 2) {
    if (rank == 0) ctx.skip(name, "needs at least 2 ranks (strata bench --ranks 2 ...)");
    return false;
  }
  return true;
}

void check(int rc, char const* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

// A window of `bytes` on every rank, locked for passive-target access for its lifetime.
struct window {
  MPI_Win win = MPI_WIN_NULL;
  void* base = nullptr;
  explicit window(std::size_t bytes) {
    check(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                           &win),
          "MPI_Win_allocate");
    check(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
  }
  ~window() {
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
  }
};

void run_latency(context& ctx) {
  int rank = 0, size = 1;
  if (!start(ctx, "dist-latency", rank, size)) return;
  dist::runtime rt(ctx.rt());
  int const n = ctx.opts().quick ? 50 : 2000;  // operations per timed run
  int const repeats = ctx.opts().quick ? 1 : std::max(3, ctx.opts().repeats / 4);
  // The target memory: 8 bytes on rank 1, for Strata and for MPI.
  dist::global_ptr<std::uint64_t> target;
  if (rank == 1) target = dist::allocate<std::uint64_t>(rt.here(), 1).get();
  dist::broadcast(rt.world(), std::span(&target, 1), 1).wait();
  window w(8);
  std::uint64_t value = 42, back = 0;
  auto strata_wait = [&] { dist::barrier(rt.world()).wait(); };
  auto mpi_wait = [] { MPI_Barrier(MPI_COMM_WORLD); };
  // Every timed run, of either side, starts with the ranks together (compare's
  // before_each): a rank still waiting for a quiet process while its peer began would
  // put the skew into the run (2,000 round trips are under a millisecond).
  auto together = [] { MPI_Barrier(MPI_COMM_WORLD); };

  auto report = [&](char const* what, double s_strata, double s_peer, char const* peer, int ops) {
    if (rank != 0) return;
    result r;
    r.bench = "dist-latency";
    r.variant = what;
    r.size = 8;
    r.strata_s = s_strata / ops;
    r.peer = peer;
    r.peer_s = s_peer / ops;
    r.note = "seconds per operation, rank 0 to rank 1, " + std::to_string(size) +
             " ranks on this machine; Strata's side includes a completion event per "
             "operation and its progress thread's hand-offs";
    ctx.report(r);
  };

  // Remote async round trip vs ping-pong.
  auto [a_s, a_p] = compare(
      repeats,
      [&] {
        if (rank == 0) {
          auto const peer = rt.rank_place(1);
          for (int i = 0; i < n; ++i) dist::async(peer, nothing{}).wait();
        }
        strata_wait();
      },
      [&] {
        std::uint64_t buf = 0;
        if (rank == 0)
          for (int i = 0; i < n; ++i) {
            MPI_Send(&buf, 1, MPI_UINT64_T, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(&buf, 1, MPI_UINT64_T, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          }
        else if (rank == 1)
          for (int i = 0; i < n; ++i) {
            MPI_Recv(&buf, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&buf, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD);
          }
        mpi_wait();
      },
      together);
  report("async-round-trip", a_s, a_p, "MPI_Send/Recv ping-pong", n);

  // Put and get: 20,000 operations per timed run. 2,000 direct puts take about 50 us,
  // about what a barrier whose ranks have parked may take, so each library's own barrier
  // at the end would weigh on the figure. (The barrier stays each library's own: with
  // STRATA_DIST_DIRECT=0 the puts are messages that rank 1 serves from its Strata wait;
  // parked in MPI_Barrier it would leave them to its idle progress thread.)
  int const n_rma = ctx.opts().quick ? 50 : 20000;
  auto [p_s, p_p] = compare(
      repeats,
      [&] {
        if (rank == 0)
          for (int i = 0; i < n_rma; ++i) dist::put(target, &value, 1).wait();
        strata_wait();
      },
      [&] {
        if (rank == 0)
          for (int i = 0; i < n_rma; ++i) {
            MPI_Put(&value, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, w.win);
            MPI_Win_flush(1, w.win);
          }
        mpi_wait();
      },
      together);
  report("put-8B", p_s, p_p, "MPI_Put+MPI_Win_flush", n_rma);

  auto [g_s, g_p] = compare(
      repeats,
      [&] {
        if (rank == 0)
          for (int i = 0; i < n_rma; ++i) dist::get(&back, target, 1).wait();
        strata_wait();
      },
      [&] {
        if (rank == 0)
          for (int i = 0; i < n_rma; ++i) {
            MPI_Get(&back, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, w.win);
            MPI_Win_flush(1, w.win);
          }
        mpi_wait();
      },
      together);
  report("get-8B", g_s, g_p, "MPI_Get+MPI_Win_flush", n_rma);
  if (rank == 0 && back != value) throw std::runtime_error("dist-latency: get read a wrong value");
  dist::barrier(rt.world()).wait();
  if (rank == 1) dist::deallocate(target).wait();
}

void run_bandwidth(context& ctx) {
  int rank = 0, size = 1;
  if (!start(ctx, "dist-bandwidth", rank, size)) return;
  dist::runtime rt(ctx.rt());
  std::size_t const largest = ctx.opts().quick ? (std::size_t{1} << 20) : (std::size_t{64} << 20);
  int const repeats = ctx.opts().quick ? 1 : std::max(3, ctx.opts().repeats / 4);
  dist::global_ptr<char> target;
  if (rank == 1) target = dist::allocate<char>(rt.here(), largest).get();
  dist::broadcast(rt.world(), std::span(&target, 1), 1).wait();
  window w(largest);
  std::vector<char> local(largest), back(largest);
  for (std::size_t i = 0; i < largest; ++i) local[i] = static_cast<char>(i * 7 + 1);
  // Both sides end a timed run with the same MPI_Barrier (rank 1's progress thread still
  // serves messages meanwhile): at 1 MiB a run is only 8 transfers, and a barrier of
  // either library would weigh on the figure of transfers it is not part of.
  auto strata_wait = [] { MPI_Barrier(MPI_COMM_WORLD); };
  auto mpi_wait = [] { MPI_Barrier(MPI_COMM_WORLD); };
  for (std::size_t bytes = 1024; bytes <= largest; bytes *= 4) {
    // Enough transfers per timed run to outlast timer noise, at most 64 MiB moved.
    int const k =
        static_cast<int>(std::clamp<std::size_t>((std::size_t{64} << 20) / bytes / 8, 1, 200));
    int const count = static_cast<int>(bytes);
    auto [p_s, p_p] = compare(
        repeats,
        [&] {
          if (rank == 0)
            for (int i = 0; i < k; ++i) dist::put(target, local.data(), bytes).wait();
          strata_wait();
        },
        [&] {
          if (rank == 0)
            for (int i = 0; i < k; ++i) {
              MPI_Put(local.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, w.win);
              MPI_Win_flush(1, w.win);
            }
          mpi_wait();
        });
    auto [g_s, g_p] = compare(
        repeats,
        [&] {
          if (rank == 0)
            for (int i = 0; i < k; ++i) dist::get(back.data(), target, bytes).wait();
          strata_wait();
        },
        [&] {
          if (rank == 0)
            for (int i = 0; i < k; ++i) {
              MPI_Get(back.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, w.win);
              MPI_Win_flush(1, w.win);
            }
          mpi_wait();
        });
    if (rank == 0) {
      if (!std::equal(back.begin(), back.begin() + static_cast<long>(bytes), local.begin()))
        throw std::runtime_error("dist-bandwidth: get returned wrong data");
      for (auto [what, s, p, peer] : {std::tuple{"put", p_s, p_p, "MPI_Put+MPI_Win_flush"},
                                      std::tuple{"get", g_s, g_p, "MPI_Get+MPI_Win_flush"}}) {
        result r;
        r.bench = "dist-bandwidth";
        r.variant = what;
        r.size = static_cast<double>(bytes);
        r.strata_s = s / k;
        r.peer = peer;
        r.peer_s = p / k;
        r.extra = {{"strata_GBps", static_cast<double>(bytes) / r.strata_s / 1e9},
                   {"peer_GBps", static_cast<double>(bytes) / r.peer_s / 1e9}};
        r.note = "seconds per transfer, rank 0 to rank 1 on this machine";
        ctx.report(r);
      }
    }
  }
  dist::barrier(rt.world()).wait();
  if (rank == 1) dist::deallocate(target).wait();
}

// dist-halo: one halo exchange of a 2-D distributed tensor (16 rows per rank, rows of
// 4096 and 65536 doubles, padding 1) through load_padding, against the hand-written
// exchange on a plain array with its ring: MPI_Irecv into the two padding rows,
// MPI_Isend of the first and last rows, MPI_Waitall. (On one node Strata's rows travel
// through mapped memory, not MPI: STRATA_DIST_DIRECT=0 measures its MPI path.)
void run_halo(context& ctx) {
  int rank = 0, size = 1;
  if (!start(ctx, "dist-halo", rank, size)) return;
  dist::runtime rt(ctx.rt());
  int const k = ctx.opts().quick ? 5 : 200;  // exchanges per timed run
  int const repeats = ctx.opts().quick ? 1 : std::max(3, ctx.opts().repeats / 4);
  for (index_t const n : {index_t{4096}, index_t{65536}}) {
    if (ctx.opts().quick && n > 4096) break;
    index_t const rows = 16;
    dist::tensor<double, 2> t(rt.world(), {rows * size, n}, {ctx.rt().machine()},
                              tensor_spec<2>{.padding = 1});
    // Each rank's value is its rank + 1, padding included (fill writes the padding too):
    // a padding row that reads the neighbour's value was received, not left from the fill.
    fill(t.local(), rank + 1.0).wait();
    auto const w = static_cast<std::size_t>(n + 2);
    std::vector<double> plain((static_cast<std::size_t>(rows) + 2) * w, 1.0);
    auto row = [&](index_t i) { return plain.data() + static_cast<std::size_t>(i + 1) * w; };
    int const up = rank - 1, down = rank + 1;
    auto by_hand = [&] {
      MPI_Request r[4];
      int m = 0;
      int const count = static_cast<int>(w);
      if (up >= 0) {
        MPI_Irecv(row(-1), count, MPI_DOUBLE, up, 11, MPI_COMM_WORLD, &r[m++]);
        MPI_Isend(row(0), count, MPI_DOUBLE, up, 12, MPI_COMM_WORLD, &r[m++]);
      }
      if (down < size) {
        MPI_Irecv(row(rows), count, MPI_DOUBLE, down, 12, MPI_COMM_WORLD, &r[m++]);
        MPI_Isend(row(rows - 1), count, MPI_DOUBLE, down, 11, MPI_COMM_WORLD, &r[m++]);
      }
      MPI_Waitall(m, r, MPI_STATUSES_IGNORE);
    };
    auto [ts, tp] = compare(
        repeats,
        [&] {
          for (int e = 0; e < k; ++e) load_padding(t.local()).wait();
          dist::barrier(rt.world()).wait();
        },
        [&] {
          for (int e = 0; e < k; ++e) by_hand();
          MPI_Barrier(MPI_COMM_WORLD);
        });
    // The exchange moved rank 1's first row into rank 0's lower padding row.
    if (size > 1 && rank == 0) {
      std::vector<double> pad(w);
      copy(view<double, 2>(ptr<double, host_space>(pad.data(), 0), vec<2>{1, n + 2}),
           t.local().local_view<host_space>(0, vec<2>{rows, -1}, vec<2>{1, n + 2}))
          .wait();
      if (pad[1] != 2.0 || pad[static_cast<std::size_t>(n)] != 2.0)
        throw std::runtime_error("dist-halo: the padding row was not received");
    }
    if (rank == 0) {
      result r;
      r.bench = "dist-halo";
      r.variant = "rows" + std::to_string(n) + "/ranks" + std::to_string(size);
      r.size = static_cast<double>(w) * sizeof(double) * 2;
      r.strata_s = ts / k;
      r.peer = "MPI_Isend/Irecv/Waitall";
      r.peer_s = tp / k;
      r.extra = {{"ranks", size}, {"row_bytes", static_cast<double>(w) * sizeof(double)}};
      r.note =
          "seconds per exchange on rank 0 (its rows out, its neighbour's in); on one node "
          "Strata's side copies its rows into a block its neighbour maps and copies the "
          "neighbour's out of theirs (docs/dist.md \"Halo rows on one node\"), between "
          "nodes it sends from and receives into the tensor's memory with MPI";
      ctx.report(r);
    }
  }
}

// dist-alltoall: the transpose of a row-block-distributed n x n array of doubles as a copy
// between two distributed array types (the destination distributed by column and stored
// transposed), against the hand-written MPI version: pack the b x b blocks per peer,
// MPI_Alltoall, then transpose each received block into place in 32 x 32 tiles.
void run_alltoall(context& ctx) {
  int rank = 0, size = 1;
  if (!start(ctx, "dist-alltoall", rank, size)) return;
  dist::runtime rt(ctx.rt());
  index_t const n = ctx.opts().quick ? 512 : 8192;
  index_t const b = n / size;
  if (b * size != n) {
    if (rank == 0)
      ctx.skip("dist-alltoall", "n = " + std::to_string(n) + " is not a multiple of the ranks");
    return;
  }
  int const repeats = ctx.opts().quick ? 1 : std::max(3, ctx.opts().repeats / 4);
  using dist::distribution;
  dist::array_type<2> rows{
      .extent = {n, n}, .dist = {distribution::block(), distribution::whole()}, .grid = {size, 1}};
  auto cols = rows;
  cols.dist = {distribution::whole(), distribution::block()};
  cols.grid = {1, size};
  cols.order = {1, 0};
  dist::array<double, 2> a(rt.world(), rows), t(rt.world(), cols);
  a.for_each([n](vec<2> const& i, double& x) { x = static_cast<double>(i[0] * n + i[1]); });
  auto const bb = static_cast<std::size_t>(b);
  auto const nn = static_cast<std::size_t>(n);
  std::vector<double> send(bb * nn), recv(bb * nn), out(bb * nn);
  auto const* in = a.local().data();
  auto by_hand = [&] {
    for (std::size_t q = 0; q < static_cast<std::size_t>(size); ++q)
      for (std::size_t i = 0; i < bb; ++i)
        std::memcpy(send.data() + q * bb * bb + i * bb, in + i * nn + q * bb, bb * sizeof(double));
    MPI_Alltoall(send.data(), static_cast<int>(bb * bb), MPI_DOUBLE, recv.data(),
                 static_cast<int>(bb * bb), MPI_DOUBLE, MPI_COMM_WORLD);
    // Block q holds rows q*b.. of my columns: out[j][q*b + i] = block[i][j].
    constexpr std::size_t tile = 32;
    for (std::size_t q = 0; q < static_cast<std::size_t>(size); ++q) {
      double const* blk = recv.data() + q * bb * bb;
      for (std::size_t i0 = 0; i0 < bb; i0 += tile)
        for (std::size_t j0 = 0; j0 < bb; j0 += tile)
          for (std::size_t i = i0; i < std::min(bb, i0 + tile); ++i)
            for (std::size_t j = j0; j < std::min(bb, j0 + tile); ++j)
              out[j * nn + q * bb + i] = blk[i * bb + j];
    }
  };
  auto [ts, tp] = compare(
      repeats,
      [&] {
        dist::copy(t, a).wait();
        dist::barrier(rt.world()).wait();
      },
      [&] {
        by_hand();
        MPI_Barrier(MPI_COMM_WORLD);
      });
  // Both sides hold this rank's rows of the transpose.
  for (std::size_t k = 0; k < out.size(); k += 997)
    if (out[k] != t.local()[k])
      throw std::runtime_error("dist-alltoall: the two transposes differ at local element " +
                               std::to_string(k));
  if (rank == 0) {
    result r;
    r.bench = "dist-alltoall";
    r.variant = "transpose" + std::to_string(n) + "/ranks" + std::to_string(size);
    r.size = static_cast<double>(n) * static_cast<double>(n) * sizeof(double);
    r.strata_s = ts;
    r.peer = "pack+MPI_Alltoall+tiled-transposes";
    r.peer_s = tp;
    r.extra = {{"ranks", size}, {"n", static_cast<double>(n)}};
    r.note = "seconds per transpose of the whole array (every rank's part)";
    ctx.report(r);
  }
}

registrar latency_reg("dist-latency",
                      "Remote async round trip and 8-byte put/get vs raw MPI (--ranks 2)",
                      run_latency);
registrar bandwidth_reg("dist-bandwidth", "put/get 1 KiB-64 MiB vs MPI_Put/Get (--ranks 2)",
                        run_bandwidth);
registrar alltoall_reg("dist-alltoall",
                       "transpose of a row-distributed array as a copy between distributed array "
                       "types vs MPI_Alltoall + local transposes (--ranks 2)",
                       run_alltoall);
registrar halo_reg("dist-halo",
                   "halo exchange of a row-split distributed tensor vs MPI_Isend/Irecv (--ranks 2)",
                   run_halo);

}  // namespace
}  // namespace strata::bench
