// dist-spmv (`strata bench --ranks N dist-spmv`, docs/apps.md "Distributed SpMV"): the
// distributed CSR product of apps/common/dist_spmv (rows split over the ranks by nonzeros,
// only the needed x entries exchanged with dist::send/recv while the local part is
// multiplied) on a 3-D Laplacian and a power-law matrix, against
//  (a) the seed's way (Phalanx §V-B: the whole vector goes to every rank): MPI_Allgatherv
//      of x, then the plain CSR loop over the rank's rows;
//  (b) the same halo exchange written by hand in MPI (MPI_Irecv of the ghosts, packed
//      MPI_Isend, the local part, MPI_Waitall, the remote part): what PETSc's MatMult does
//      for an MPIAIJ matrix, without PETSc;
//  (c) PETSc's MatMult when PETSc was found at configure time (else a skip line).
// Strata reads the rows as distributed_spmv does by default (spmv_format::automatic: the
// Laplacian's local rows in row groups, eight rows of one stencil pattern as vectors, or
// value-indexed with column offsets, 3 bytes per nonzero instead of 12; the power-law
// matrix's rows, whose columns are scattered over an x larger than the L2, in column
// blocks, where each tile reads its block of x in address order instead of a miss per
// nonzero, if a timed trial finds them faster) and, as variant ".../csr", forced to CSR like (b)
// and (c) (left out where no rank's rows were encoded). One thread per rank on every side (Strata's
// places use the serial backend), as MPI codes run one rank per core. Every rank runs the same
// sequence; rank 0 reports.
#include <strata/dist.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef STRATA_BENCH_HAVE_PETSC
#include <petscmat.h>
#endif

#include "dist_spmv.hpp"
#include "harness.hpp"
#include "places.hpp"
#include "sparse.hpp"

namespace strata::bench {
namespace {

using apps::csr_index;

// y[r] = row r of m times x (x indexed by m's columns); `add` accumulates into y[rows[r]].
void csr_loop(apps::csr_matrix const& m, double const* x, double* y) {
  for (csr_index r = 0; r < m.rows; ++r) {
    double s = 0;
    for (auto k = m.row_ptr[static_cast<std::size_t>(r)];
         k < m.row_ptr[static_cast<std::size_t>(r) + 1]; ++k)
      s += m.val[static_cast<std::size_t>(k)] * x[m.col[static_cast<std::size_t>(k)]];
    y[r] = s;
  }
}

// The hand-written halo exchange of (b): the same split as apps::distributed_spmv, found
// from the whole matrix that every rank has.
struct mpi_halo {
  apps::csr_matrix local, remote;
  std::vector<csr_index> remote_rows;
  std::vector<double> ghosts, remote_y;
  struct peer {
    int rank;
    std::vector<csr_index> index;  // sends: local x indices; receives: offset, count
    std::vector<double> buffer;
    std::size_t offset = 0, count = 0;
  };
  std::vector<peer> from, to;

  mpi_halo(apps::csr_matrix const& a, std::vector<csr_index> const& bounds, int me) {
    auto const owner = [&](csr_index c) {
      return static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), c) - bounds.begin()) -
             1;
    };
    auto const first = bounds[static_cast<std::size_t>(me)];
    auto const last = bounds[static_cast<std::size_t>(me) + 1];
    std::vector<csr_index> needed;
    for (auto k = a.row_ptr[static_cast<std::size_t>(first)];
         k < a.row_ptr[static_cast<std::size_t>(last)]; ++k) {
      auto c = a.col[static_cast<std::size_t>(k)];
      if (c < first || c >= last) needed.push_back(c);
    }
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    local.rows = local.cols = last - first;
    remote.cols = static_cast<csr_index>(needed.size());
    remote.row_ptr = local.row_ptr = {0};
    for (csr_index r = first; r < last; ++r) {
      bool any = false;
      for (auto k = a.row_ptr[static_cast<std::size_t>(r)];
           k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
        auto c = a.col[static_cast<std::size_t>(k)];
        auto v = a.val[static_cast<std::size_t>(k)];
        if (c >= first && c < last) {
          local.col.push_back(c - first);
          local.val.push_back(v);
        } else {
          remote.col.push_back(static_cast<csr_index>(
              std::lower_bound(needed.begin(), needed.end(), c) - needed.begin()));
          remote.val.push_back(v);
          any = true;
        }
      }
      local.row_ptr.push_back(static_cast<csr_index>(local.col.size()));
      if (any) {
        remote_rows.push_back(r - first);
        remote.row_ptr.push_back(static_cast<csr_index>(remote.col.size()));
      }
    }
    remote.rows = static_cast<csr_index>(remote_rows.size());
    ghosts.resize(needed.size());
    remote_y.resize(remote_rows.size());
    for (std::size_t i = 0; i < needed.size();) {
      peer p{owner(needed[i]), {}, {}, i, 0};
      while (i < needed.size() && owner(needed[i]) == p.rank) ++i;
      p.count = i - p.offset;
      from.push_back(std::move(p));
    }
    // What each other rank needs from me: the columns in my range its rows read.
    int const size = static_cast<int>(bounds.size()) - 1;
    for (int q = 0; q < size; ++q) {
      if (q == me) continue;
      std::vector<csr_index> cols;
      for (auto k = a.row_ptr[static_cast<std::size_t>(bounds[static_cast<std::size_t>(q)])];
           k < a.row_ptr[static_cast<std::size_t>(bounds[static_cast<std::size_t>(q) + 1])]; ++k) {
        auto c = a.col[static_cast<std::size_t>(k)];
        if (c >= first && c < last) cols.push_back(c - first);
      }
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
      if (cols.empty()) continue;
      peer p{q, std::move(cols), {}, 0, 0};
      p.buffer.resize(p.index.size());
      to.push_back(std::move(p));
    }
  }

  void multiply(double const* x, double* y) {
    std::vector<MPI_Request> recv(from.size()), send(to.size());
    for (std::size_t i = 0; i < from.size(); ++i)
      MPI_Irecv(ghosts.data() + from[i].offset, static_cast<int>(from[i].count), MPI_DOUBLE,
                from[i].rank, 21, MPI_COMM_WORLD, &recv[i]);
    for (std::size_t i = 0; i < to.size(); ++i) {
      auto& p = to[i];
      for (std::size_t j = 0; j < p.index.size(); ++j)
        p.buffer[j] = x[static_cast<std::size_t>(p.index[j])];
      MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_DOUBLE, p.rank, 21,
                MPI_COMM_WORLD, &send[i]);
    }
    csr_loop(local, x, y);
    MPI_Waitall(static_cast<int>(recv.size()), recv.data(), MPI_STATUSES_IGNORE);
    csr_loop(remote, ghosts.data(), remote_y.data());
    for (std::size_t i = 0; i < remote_rows.size(); ++i)
      y[static_cast<std::size_t>(remote_rows[i])] += remote_y[i];
    MPI_Waitall(static_cast<int>(send.size()), send.data(), MPI_STATUSES_IGNORE);
  }
};

#ifdef STRATA_BENCH_HAVE_PETSC
// PETSc's MPIAIJ matrix from this rank's rows (global columns), x and y wrapping the
// benchmark's arrays. MPI is already initialized (by Strata), so PETSc uses it and leaves
// it to Strata to finalize.
struct petsc_side {
  Mat a = nullptr;
  Vec x = nullptr, y = nullptr;
  petsc_side(apps::row_block const& b, csr_index n, double* xs, double* ys) {
    PetscBool up = PETSC_FALSE;
    PetscInitialized(&up);
    if (!up) PetscInitializeNoArguments();
    std::vector<PetscInt> rp(b.rows.row_ptr.begin(), b.rows.row_ptr.end());
    std::vector<PetscInt> cols(b.rows.col.begin(), b.rows.col.end());
    MatCreateMPIAIJWithArrays(PETSC_COMM_WORLD, b.rows.rows, b.rows.rows, n, n, rp.data(),
                              cols.data(), b.rows.val.data(), &a);
    VecCreateMPIWithArray(PETSC_COMM_WORLD, 1, b.rows.rows, n, xs, &x);
    VecCreateMPIWithArray(PETSC_COMM_WORLD, 1, b.rows.rows, n, ys, &y);
  }
  ~petsc_side() {
    VecDestroy(&x);
    VecDestroy(&y);
    MatDestroy(&a);
  }
  void multiply() { MatMult(a, x, y); }
};
#endif

void check(apps::row_block const& b, std::vector<double> const& x, std::vector<double> const& y,
           std::vector<double> const& want, std::string const& who) {
  double err = apps::max_scaled_difference(b, x.data(), y.data(), want.data());
  if (!(err <= 1e-12))
    throw std::runtime_error("dist-spmv: " + who + " differs from the reference rows by " +
                             std::to_string(err));
}

void run_matrix(context& ctx, dist::runtime& rt, std::string const& name, apps::csr_matrix a) {
  int const me = rt.rank(), size = rt.size();
  auto const bounds = apps::split_over_ranks(a, size);
  auto block = apps::extract_rows(a, bounds[static_cast<std::size_t>(me)],
                                  bounds[static_cast<std::size_t>(me) + 1]);
  auto const first = static_cast<std::size_t>(block.first_row);
  auto const rows = static_cast<std::size_t>(block.rows.rows);
  std::vector<double> x_all(static_cast<std::size_t>(a.cols)), want(rows);
  for (std::size_t i = 0; i < x_all.size(); ++i) x_all[i] = 1.0 + static_cast<double>(i % 13) / 16;
  {  // This rank's rows of the reference product.
    apps::csr_matrix own = block.rows;
    own.cols = a.cols;
    csr_loop(own, x_all.data(), want.data());
  }
  std::vector<double> x(x_all.begin() + static_cast<std::ptrdiff_t>(first),
                        x_all.begin() + static_cast<std::ptrdiff_t>(first + rows));
  std::vector<double> ys(rows), yp(rows);

  // (a) Allgatherv's counts and offsets; (b) the halo lists.
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(counts.size());
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = bounds[static_cast<std::size_t>(r)];
    counts[static_cast<std::size_t>(r)] =
        bounds[static_cast<std::size_t>(r) + 1] - bounds[static_cast<std::size_t>(r)];
  }
  std::vector<double> x_full(x_all.size());
  mpi_halo halo(a, bounds, me);
  double const nnz = static_cast<double>(a.nnz());
  a = {};  // from here on each rank keeps its own rows (and x, for the checks)

  auto const where = apps::places_named(rt.machine(), "host@serial");
  apps::distributed_spmv product(rt.world(), static_cast<csr_index>(x_full.size()), block, where);
  auto const info = product.info();
  // The same product reading the rows as CSR, where the automatic choice encoded them (every
  // rank decides from its own rows, so the ranks agree on it before making it collectively).
  int encoded = info.local_encoding != apps::spmv_encoding::csr ||
                info.remote_encoding != apps::spmv_encoding::csr;
  MPI_Allreduce(MPI_IN_PLACE, &encoded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  std::optional<apps::distributed_spmv> csr_product;
  if (encoded)
    csr_product.emplace(rt.world(), static_cast<csr_index>(x_full.size()), block, where,
                        apps::spmv_format::csr);
  int const k = ctx.opts().quick ? 2 : 20;  // products per timed run
  int const repeats = ctx.opts().quick ? 1 : std::max(3, ctx.opts().repeats / 4);
  auto strata_side = [&] {
    for (int i = 0; i < k; ++i) product.multiply(x.data(), ys.data());
    dist::barrier(rt.world()).wait();
  };
  auto strata_csr_side = [&] {
    for (int i = 0; i < k; ++i) csr_product->multiply(x.data(), ys.data());
    dist::barrier(rt.world()).wait();
  };
  struct peer {
    std::string name;
    std::function<void()> run;
  };
  std::vector<peer> peers = {
      {"MPI_Allgatherv+csr",
       [&] {
         for (int i = 0; i < k; ++i) {
           MPI_Allgatherv(x.data(), static_cast<int>(rows), MPI_DOUBLE, x_full.data(),
                          counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
           for (std::size_t r = 0; r < rows; ++r) {
             double s = 0;
             for (auto j = block.rows.row_ptr[r]; j < block.rows.row_ptr[r + 1]; ++j)
               s += block.rows.val[static_cast<std::size_t>(j)] *
                    x_full[static_cast<std::size_t>(block.rows.col[static_cast<std::size_t>(j)])];
             yp[r] = s;
           }
         }
         MPI_Barrier(MPI_COMM_WORLD);
       }},
      {"MPI_Isend/Irecv-halo+csr", [&] {
         for (int i = 0; i < k; ++i) halo.multiply(x.data(), yp.data());
         MPI_Barrier(MPI_COMM_WORLD);
       }}};
#ifdef STRATA_BENCH_HAVE_PETSC
  petsc_side petsc(block, static_cast<csr_index>(x_full.size()), x.data(), yp.data());
  peers.push_back({"petsc-MatMult", [&] {
                     for (int i = 0; i < k; ++i) petsc.multiply();
                     MPI_Barrier(MPI_COMM_WORLD);
                   }});
#endif
  // Every peer against the automatic product; the CSR product (variant ".../csr") against
  // the hand-written halo exchange and PETSc, which read CSR too.
  struct run {
    peer const* against;
    bool csr;
  };
  std::vector<run> runs;
  for (auto const& p : peers) runs.push_back({&p, false});
  if (csr_product)
    for (std::size_t i = 1; i < peers.size(); ++i) runs.push_back({&peers[i], true});
  for (auto const& [against, csr] : runs) {
    auto const& p = *against;
    std::fill(ys.begin(), ys.end(), 0.0);
    std::fill(yp.begin(), yp.end(), 0.0);
    auto [ts, tp] =
        csr ? compare(repeats, strata_csr_side, p.run) : compare(repeats, strata_side, p.run);
    check(block, x_all, ys, want, "strata on " + name);
    check(block, x_all, yp, want, p.name + " on " + name);
    if (me != 0) continue;
    result r{"dist-spmv", name + (csr ? "/csr" : "") + "/ranks" + std::to_string(size),
             nnz,         ts / k,
             p.name,      tp / k};
    r.extra = {{"ranks", size},
               {"rows", static_cast<double>(x_full.size())},
               {"rank0_ghosts", info.ghosts},
               {"rank0_sent", info.sent},
               {"strata_gflops", 2.0 * nnz / (ts / k) / 1e9},
               {"peer_gflops", 2.0 * nnz / (tp / k) / 1e9}};
    r.note = "size = nonzeros; seconds per product on rank 0 (a barrier ends each timed run of " +
             std::to_string(k) +
             "); one thread per rank on both sides; Strata sends only the x entries other "
             "ranks' rows read; rank 0 reads its local rows " +
             std::string(apps::to_string(csr ? apps::spmv_encoding::csr : info.local_encoding)) +
             " and its remote rows " +
             std::string(apps::to_string(csr ? apps::spmv_encoding::csr : info.remote_encoding)) +
             ", the peers CSR";
    ctx.report(r);
  }
}

void run_dist_spmv(context& ctx) {
  if (!dist::launched_by_mpi()) {
    ctx.skip("dist-spmv", "needs MPI ranks: run `strata bench --ranks 2 dist-spmv`");
    return;
  }
  dist::runtime rt(ctx.rt());
  bool const quick = ctx.opts().quick;
  csr_index const side = quick ? 24 : 96;
  run_matrix(ctx, rt, "laplacian3d-" + std::to_string(side), apps::laplacian_3d(side, side, side));
  csr_index const n = quick ? 20000 : 1000000;
  run_matrix(ctx, rt, "power-law-" + std::to_string(n), apps::random_power_law(n, 8, 2024));
#ifndef STRATA_BENCH_HAVE_PETSC
  if (rt.rank() == 0)
    ctx.skip("dist-spmv/petsc",
             "PETSc was not found at configure time: install Debian's libpetsc-real-dev and "
             "reconfigure to compare with MatMult");
#endif
}

registrar dist_spmv_reg("dist-spmv",
                        "distributed CSR SpMV (apps/common/dist_spmv) vs MPI_Allgatherv + CSR, "
                        "a hand-written MPI halo exchange and PETSc MatMult (--ranks 2)",
                        run_dist_spmv);

}  // namespace
}  // namespace strata::bench
