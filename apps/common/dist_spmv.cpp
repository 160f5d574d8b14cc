#include "dist_spmv.hpp"

#include "places.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>

namespace apps {

namespace dist = strata::dist;

std::vector<csr_index> split_over_ranks(csr_matrix const& a, int parts) {
  return split_rows(a, 0, a.rows, parts);
}

row_block extract_rows(csr_matrix const& a, csr_index first, csr_index last) {
  if (first < 0 || last < first || last > a.rows)
    throw strata::invalid_argument("extract_rows: rows [" + std::to_string(first) + ", " +
                                   std::to_string(last) + ") of a matrix of " +
                                   std::to_string(a.rows) + " rows");
  row_block b;
  b.first_row = first;
  b.rows.rows = last - first;
  b.rows.cols = a.cols;
  auto const k0 = a.row_ptr[static_cast<std::size_t>(first)];
  auto const k1 = a.row_ptr[static_cast<std::size_t>(last)];
  b.rows.row_ptr.resize(static_cast<std::size_t>(last - first) + 1);
  for (csr_index r = first; r <= last; ++r)
    b.rows.row_ptr[static_cast<std::size_t>(r - first)] =
        a.row_ptr[static_cast<std::size_t>(r)] - k0;
  b.rows.col.assign(a.col.begin() + k0, a.col.begin() + k1);
  b.rows.val.assign(a.val.begin() + k0, a.val.begin() + k1);
  return b;
}

double max_scaled_difference(row_block const& b, double const* x, double const* y,
                             double const* want) {
  double worst = 0;
  auto const& m = b.rows;
  for (std::size_t r = 0; r < static_cast<std::size_t>(m.rows); ++r) {
    double magnitude = 0;
    for (auto k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k)
      magnitude += std::abs(m.val[static_cast<std::size_t>(k)] *
                            x[static_cast<std::size_t>(m.col[static_cast<std::size_t>(k)])]);
    double const d = std::abs(y[r] - want[r]) / std::max(1.0, magnitude);
    if (std::isnan(d)) return d;  // a NaN is the worst, whatever follows
    worst = std::max(worst, d);
  }
  return worst;
}

namespace {

// Tags on the object's own team (so they never meet the caller's messages): the setup's
// lists of needed columns, and each product's x entries.
constexpr int setup_tag = 1;
constexpr int product_tag = 2;

// What is wrong with a rank's block, or an empty string. Checked before any collective
// and its verdict shared, so that one rank's bad input fails every rank instead of
// leaving the others waiting in a collective it never joins.
std::string block_problem(csr_index global_rows, row_block const& b) {
  auto const& m = b.rows;
  if (global_rows < 0) return "a negative global size " + std::to_string(global_rows);
  if (m.cols != global_rows)
    return "rows of " + std::to_string(m.cols) + " columns in a matrix of " +
           std::to_string(global_rows) + " rows; expected a square matrix";
  if (b.first_row < 0 || m.rows < 0 || b.first_row > global_rows - m.rows)
    return "rows [" + std::to_string(b.first_row) + ", " + std::to_string(b.first_row + m.rows) +
           ") outside a matrix of " + std::to_string(global_rows) + " rows";
  if (m.row_ptr.size() != static_cast<std::size_t>(m.rows) + 1 || m.row_ptr.front() != 0 ||
      m.row_ptr.back() != static_cast<csr_index>(m.col.size()) || m.col.size() != m.val.size())
    return "row_ptr of " + std::to_string(m.row_ptr.size()) + " entries for " +
           std::to_string(m.rows) + " rows and " + std::to_string(m.col.size()) +
           " column indices (" + std::to_string(m.val.size()) +
           " values); expected rows + 1 entries from 0 to the number of entries";
  for (std::size_t r = 0; r < static_cast<std::size_t>(m.rows); ++r)
    if (m.row_ptr[r] > m.row_ptr[r + 1])
      return "row_ptr decreasing at row " + std::to_string(b.first_row + static_cast<csr_index>(r));
  for (std::size_t k = 0; k < m.col.size(); ++k)
    if (m.col[k] < 0 || m.col[k] >= global_rows)
      return "column " + std::to_string(m.col[k]) + " (entry " + std::to_string(k) +
             ") outside a matrix of " + std::to_string(global_rows) + " columns";
  return {};
}

// The places the remote part runs on: the host ones (its rows are few and scattered, not
// worth a device's copies in and out), or all of them on a machine of devices only.
std::vector<strata::target> host_targets(std::vector<strata::target> const& where) {
  std::vector<strata::target> out;
  for (auto const& t : where)
    if (!is_device(t.where)) out.push_back(t);
  if (out.empty()) out = where;
  return out;
}

struct recv_peer {
  int rank;
  std::size_t offset, count;  // this peer's ghosts: ghosts[offset, offset + count)
};

struct send_peer {
  int rank;
  std::vector<csr_index> index;  // local indices into this rank's x, in the peer's order
  std::vector<double> buffer;    // the packed values, alive until the send completes
};

}  // namespace

struct distributed_spmv::state {
  dist::team team;  // a private communicator over the caller's team
  int me = 0;
  std::vector<csr_index> bounds;
  csr_index first = 0, rows = 0;
  csr_matrix local;                    // columns this rank owns, renumbered from `first`
  csr_matrix remote;                   // rows with other ranks' columns; columns are ghost indices
  std::vector<csr_index> remote_rows;  // remote row i is local row remote_rows[i]
  std::optional<partitioned_spmv> local_product, remote_product;
  std::vector<double> ghosts, remote_y;
  std::vector<recv_peer> from;
  std::vector<send_peer> to;
  std::int64_t local_nnz = 0, remote_nnz = 0;
  // The previous product's sends: its buffers are repacked only once they are done.
  std::vector<strata::event> sends;

  ~state() {
    for (auto& e : sends) try {
        e.wait();
      } catch (...) {  // a failed send was reported by nobody; the buffers are free now
      }
  }
};

distributed_spmv::distributed_spmv(dist::team const& team, csr_index global_rows,
                                   row_block const& block, std::vector<strata::target> const& where,
                                   spmv_format format)
    : state_(std::make_unique<state>()) {
  auto& s = *state_;
  if (where.empty()) throw strata::invalid_argument("distributed_spmv: no places to run on");
  s.team = dist::runtime::current().make_team(team.ranks());
  s.me = s.team.rank();
  auto const size = s.team.size();
  auto const n = static_cast<std::size_t>(size);

  // 1. Every rank's claim, with its own verdict on its block: all ranks then fail alike.
  std::string const problem = block_problem(global_rows, block);
  std::int64_t const mine[4] = {problem.empty() ? 1 : 0, global_rows, block.first_row,
                                block.rows.rows};
  std::vector<std::int64_t> all(4 * n);
  dist::all_gather(s.team, std::span<std::int64_t const>(mine), std::span(all)).wait();
  auto claim = [&](int r, int i) { return all[static_cast<std::size_t>(r) * 4 + i]; };
  for (int r = 0; r < size; ++r)
    if (claim(r, 0) == 0)
      throw strata::invalid_argument(
          "distributed_spmv: team rank " + std::to_string(r) + "'s row block is malformed" +
          (r == s.me ? ": " + problem : std::string(" (that rank's message says how)")));
  for (int r = 0; r < size; ++r)
    if (claim(r, 1) != claim(0, 1))
      throw strata::invalid_argument("distributed_spmv: team rank " + std::to_string(r) +
                                     " passed a global size of " + std::to_string(claim(r, 1)) +
                                     " rows, team rank 0 " + std::to_string(claim(0, 1)) +
                                     "; expected the same on every rank");
  s.bounds.assign(n + 1, 0);
  for (int r = 0; r < size; ++r) {
    if (claim(r, 2) != s.bounds[static_cast<std::size_t>(r)])
      throw strata::invalid_argument("distributed_spmv: team rank " + std::to_string(r) +
                                     "'s rows start at " + std::to_string(claim(r, 2)) +
                                     "; expected " +
                                     std::to_string(s.bounds[static_cast<std::size_t>(r)]) +
                                     " (the ranks' row ranges must tile the matrix in rank order)");
    s.bounds[static_cast<std::size_t>(r) + 1] = static_cast<csr_index>(claim(r, 2) + claim(r, 3));
  }
  if (s.bounds.back() != global_rows)
    throw strata::invalid_argument("distributed_spmv: the ranks' rows end at " +
                                   std::to_string(s.bounds.back()) + " in a matrix of " +
                                   std::to_string(global_rows) + " rows");

  // 2. Split the rows: owned columns into `local`, the others into `remote`, whose
  //    columns are the sorted distinct remote columns (so grouped by owner, in rank order).
  s.first = block.first_row;
  s.rows = block.rows.rows;
  auto const& m = block.rows;
  auto const last = s.first + s.rows;
  std::vector<csr_index> needed;  // global columns owned elsewhere
  for (auto c : m.col)
    if (c < s.first || c >= last) needed.push_back(c);
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  auto ghost_of = [&](csr_index c) {
    return static_cast<csr_index>(std::lower_bound(needed.begin(), needed.end(), c) -
                                  needed.begin());
  };
  s.local.rows = s.local.cols = s.rows;
  s.local.row_ptr.assign(1, 0);
  s.remote.cols = static_cast<csr_index>(needed.size());
  s.remote.row_ptr.assign(1, 0);
  for (csr_index r = 0; r < s.rows; ++r) {
    bool any_remote = false;
    for (auto k = m.row_ptr[static_cast<std::size_t>(r)];
         k < m.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      auto const c = m.col[static_cast<std::size_t>(k)];
      auto const v = m.val[static_cast<std::size_t>(k)];
      if (c >= s.first && c < last) {
        s.local.col.push_back(c - s.first);
        s.local.val.push_back(v);
      } else {
        s.remote.col.push_back(ghost_of(c));
        s.remote.val.push_back(v);
        any_remote = true;
      }
    }
    s.local.row_ptr.push_back(static_cast<csr_index>(s.local.col.size()));
    if (any_remote) {
      s.remote_rows.push_back(r);
      s.remote.row_ptr.push_back(static_cast<csr_index>(s.remote.col.size()));
    }
  }
  s.remote.rows = static_cast<csr_index>(s.remote_rows.size());
  s.local_nnz = s.local.nnz();
  s.remote_nnz = s.remote.nnz();
  s.ghosts.assign(needed.size(), 0.0);
  s.remote_y.assign(s.remote_rows.size(), 0.0);

  // 3. Who sends what: counts by all-to-all, then each rank's needed columns go to their
  //    owner, which keeps them as the order it packs its x entries in.
  std::vector<std::int64_t> want(n, 0), owe(n, 0);
  std::size_t offset = 0;
  for (int r = 0; r < size; ++r) {
    auto const lo = std::lower_bound(needed.begin() + static_cast<std::ptrdiff_t>(offset),
                                     needed.end(), s.bounds[static_cast<std::size_t>(r)]);
    auto const hi = std::lower_bound(lo, needed.end(), s.bounds[static_cast<std::size_t>(r) + 1]);
    auto const count = static_cast<std::size_t>(hi - lo);
    want[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(count);
    if (count > 0) s.from.push_back({r, static_cast<std::size_t>(lo - needed.begin()), count});
    offset = static_cast<std::size_t>(hi - needed.begin());
  }
  dist::all_to_all(s.team, std::span<std::int64_t const>(want), std::span(owe)).wait();
  std::vector<strata::event> setup;
  for (auto const& p : s.from)
    setup.push_back(dist::send(s.team, p.rank, setup_tag,
                               std::span<csr_index const>(needed.data() + p.offset, p.count)));
  for (int r = 0; r < size; ++r)
    if (owe[static_cast<std::size_t>(r)] > 0) {
      auto& p = s.to.emplace_back();
      p.rank = r;
      p.index.resize(static_cast<std::size_t>(owe[static_cast<std::size_t>(r)]));
      p.buffer.resize(p.index.size());
      setup.push_back(dist::recv(s.team, r, setup_tag, std::span(p.index)));
    }
  strata::wait_all(setup);
  for (auto& p : s.to)
    for (auto& i : p.index) {
      if (i < s.first || i >= last)  // cannot happen with the checks above; cheap to keep
        throw strata::error("distributed_spmv: team rank " + std::to_string(p.rank) +
                            " asked for x entry " + std::to_string(i) + ", not owned here");
      i -= s.first;
    }

  // 4. The products over this rank's places (partitioned_spmv keeps a pointer to its
  //    matrix: s lives on the heap, so the matrices stay where they are).
  s.local_product.emplace(s.local, where, format);
  if (s.remote.rows > 0) s.remote_product.emplace(s.remote, host_targets(where), format);
}

distributed_spmv::~distributed_spmv() = default;
distributed_spmv::distributed_spmv(distributed_spmv&&) noexcept = default;
distributed_spmv& distributed_spmv::operator=(distributed_spmv&&) noexcept = default;

void distributed_spmv::multiply(double const* x, double* y) {
  auto& s = *state_;
  // The previous product's sends normally completed long ago (the neighbours received
  // them before finishing that product); their failure is this product's.
  auto previous = std::move(s.sends);
  s.sends.clear();
  strata::wait_all(previous);
  std::vector<strata::event> recvs;
  recvs.reserve(s.from.size());
  // Receives first, so that a neighbour's early send finds its buffer posted.
  for (auto const& p : s.from)
    recvs.push_back(dist::recv(s.team, p.rank, product_tag,
                               std::span<double>(s.ghosts.data() + p.offset, p.count)));
  for (auto& p : s.to) {
    for (std::size_t i = 0; i < p.index.size(); ++i)
      p.buffer[i] = x[static_cast<std::size_t>(p.index[i])];
    s.sends.push_back(dist::send(s.team, p.rank, product_tag, std::span<double const>(p.buffer)));
  }
  try {
    // The local part needs nothing from the others: it runs while the messages travel.
    s.local_product->multiply(x, y);
    strata::wait_all(recvs);
    if (s.remote_product) {
      s.remote_product->multiply(s.ghosts.data(), s.remote_y.data());
      for (std::size_t i = 0; i < s.remote_rows.size(); ++i)
        y[static_cast<std::size_t>(s.remote_rows[i])] += s.remote_y[i];
    }
  } catch (...) {
    // The ghosts must outlive the receives in flight: wait for them, then report.
    for (auto& e : recvs) try {
        e.wait();
      } catch (...) {
      }
    throw;
  }
  // The sends are not waited for here: x's packed entries are in this object's buffers,
  // so the caller may change x at once, and the wait (a round trip through both ranks'
  // progress threads for a rendezvous-sized message) leaves the critical path.
}

dist_spmv_info distributed_spmv::info() const {
  auto const& s = *state_;
  dist_spmv_info i;
  i.first_row = s.first;
  i.rows = s.rows;
  i.global_rows = s.bounds.back();
  i.local_nonzeros = s.local_nnz;
  i.remote_nonzeros = s.remote_nnz;
  i.ghosts = static_cast<csr_index>(s.ghosts.size());
  auto const encoding = [](std::optional<partitioned_spmv> const& product) {
    if (product)
      for (auto const& p : product->parts())
        if (!p.device) return p.encoding;
    return spmv_encoding::csr;
  };
  i.local_encoding = encoding(s.local_product);
  i.remote_encoding = encoding(s.remote_product);
  for (auto const& p : s.from) i.receives_from.push_back(p.rank);
  for (auto const& p : s.to) {
    i.sends_to.push_back(p.rank);
    i.sent += static_cast<csr_index>(p.index.size());
  }
  return i;
}

std::vector<csr_index> const& distributed_spmv::row_bounds() const {
  return state_->bounds;
}

}  // namespace apps
