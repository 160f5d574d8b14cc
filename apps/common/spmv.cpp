#include "spmv.hpp"

#include "places.hpp"

#include <algorithm>
#include <numeric>

namespace apps {

std::vector<csr_index> split_rows(csr_matrix const& a, csr_index first, csr_index last, int parts,
                                  std::vector<double> const& shares) {
  if (parts < 1 || first < 0 || last < first || last > a.rows)
    throw strata::invalid_argument("split_rows: rows [" + std::to_string(first) + ", " +
                                   std::to_string(last) + ") into " + std::to_string(parts) +
                                   " parts of a matrix of " + std::to_string(a.rows) + " rows");
  auto weight = [&](csr_index r) {  // rows before r in the range, plus their nonzeros
    return static_cast<double>(a.row_ptr[static_cast<std::size_t>(r)] -
                               a.row_ptr[static_cast<std::size_t>(first)]) +
           static_cast<double>(r - first);
  };
  std::vector<double> cut(static_cast<std::size_t>(parts) + 1, 0.0);
  for (int p = 0; p < parts; ++p)
    cut[static_cast<std::size_t>(p) + 1] =
        cut[static_cast<std::size_t>(p)] +
        (shares.empty() ? 1.0 : shares[static_cast<std::size_t>(p)]);
  double const total = weight(last);
  std::vector<csr_index> bounds{first};
  csr_index r = first;
  for (int p = 1; p < parts; ++p) {
    double const goal = total * cut[static_cast<std::size_t>(p)] / cut.back();
    // The first row whose preceding weight reaches the goal (weights grow with r).
    csr_index lo = r, hi = last;
    while (lo < hi) {
      csr_index mid = lo + (hi - lo) / 2;
      if (weight(mid) < goal)
        lo = mid + 1;
      else
        hi = mid;
    }
    r = lo;
    bounds.push_back(r);
  }
  bounds.push_back(last);
  return bounds;
}

namespace {

// Chunks per thread of a part: enough for the threads backend's dynamic claiming to even
// out rows of unequal cost, few enough that a chunk's bookkeeping is nothing.
constexpr int chunks_per_thread = 16;

struct part {
  strata::target where;
  csr_index first = 0, last = 0;
  bool device = false;
  strata::index_t chunks = 0;
  std::vector<csr_index> split;  // host parts: local chunk bounds
  // Device parts: the rows, rebased, in the device's memory, and x and y there.
  strata::buffer<csr_index, 1, strata::sim_space> d_split, d_row_ptr, d_col;
  strata::buffer<double, 1, strata::sim_space> d_val, d_x, d_y;
  std::unique_ptr<strata::queue> q;
};

}  // namespace

struct partitioned_spmv::state {
  csr_matrix const* a;
  std::vector<part> parts;
  std::uint32_t host_memory = 0;
};

partitioned_spmv::partitioned_spmv(csr_matrix const& a, std::vector<strata::target> const& where)
    : state_(std::make_unique<state>()) {
  if (where.empty()) throw strata::invalid_argument("partitioned_spmv: no places to run on");
  state_->a = &a;
  state_->host_memory = host_memory_id(where.front().where);
  std::vector<double> shares;
  for (auto const& t : where) shares.push_back(place_share(t.where));
  auto bounds = split_rows(a, 0, a.rows, static_cast<int>(where.size()), shares);
  std::vector<strata::event> copies;
  std::vector<std::vector<csr_index>> staging;  // rebased row_ptr, alive until copied
  for (std::size_t i = 0; i < where.size(); ++i) {
    part p{where[i]};
    p.first = bounds[i];
    p.last = bounds[i + 1];
    p.device = is_device(where[i].where);
    int const threads = place_threads(where[i].where);
    auto local = split_rows(a, p.first, p.last, std::max(1, threads * chunks_per_thread));
    for (auto& b : local) b -= p.first;
    p.chunks = static_cast<strata::index_t>(local.size()) - 1;
    if (!p.device) {
      p.split = std::move(local);
    } else {
      auto const rows = static_cast<std::size_t>(p.last - p.first);
      auto const k0 = a.row_ptr[static_cast<std::size_t>(p.first)];
      auto const nnz = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(p.last)] - k0);
      auto& d = p.where.where;
      p.q = std::make_unique<strata::queue>(p.where);
      p.d_split = {d, local.size()};
      p.d_row_ptr = {d, rows + 1};
      p.d_col = {d, std::max<std::size_t>(nnz, 1)};
      p.d_val = {d, std::max<std::size_t>(nnz, 1)};
      p.d_x = {d, std::max<std::size_t>(static_cast<std::size_t>(a.cols), 1)};
      p.d_y = {d, std::max<std::size_t>(rows, 1)};
      staging.push_back(std::move(local));
      auto& rebased = staging.emplace_back(rows + 1);
      for (std::size_t r = 0; r <= rows; ++r)
        rebased[r] = a.row_ptr[static_cast<std::size_t>(p.first) + r] - k0;
      auto& split_host = staging[staging.size() - 2];
      copies.push_back(p.q->copy(p.d_split.data(), host_ptr(split_host.data(), state_->host_memory),
                                 split_host.size()));
      copies.push_back(
          p.q->copy(p.d_row_ptr.data(), host_ptr(rebased.data(), state_->host_memory), rows + 1));
      if (nnz > 0) {
        copies.push_back(
            p.q->copy(p.d_col.data(), host_ptr(a.col.data() + k0, state_->host_memory), nnz));
        copies.push_back(
            p.q->copy(p.d_val.data(), host_ptr(a.val.data() + k0, state_->host_memory), nnz));
      }
    }
    state_->parts.push_back(std::move(p));
  }
  strata::wait_all(copies);
}

partitioned_spmv::~partitioned_spmv() = default;
partitioned_spmv::partitioned_spmv(partitioned_spmv&&) noexcept = default;
partitioned_spmv& partitioned_spmv::operator=(partitioned_spmv&&) noexcept = default;

void partitioned_spmv::multiply(double const* x, double* y) {
  auto const& a = *state_->a;
  std::vector<strata::event> done;
  // Devices first: their copies and kernels proceed while the host parts compute.
  for (auto& p : state_->parts) {
    if (!p.device || p.last == p.first) continue;
    auto const rows = static_cast<std::size_t>(p.last - p.first);
    p.q->copy(p.d_x.data(), host_ptr(x, state_->host_memory), static_cast<std::size_t>(a.cols));
    p.q->launch(strata::divide_work(p.where, p.chunks), csr_spmv_kernel{}, p.chunks,
                p.d_split.data(), p.d_row_ptr.data(), p.d_col.data(), p.d_val.data(), p.d_x.data(),
                p.d_y.data());
    done.push_back(p.q->copy(host_ptr(y + p.first, state_->host_memory), p.d_y.data(), rows));
  }
  for (auto& p : state_->parts) {
    if (p.device || p.last == p.first) continue;
    done.push_back(strata::launch(
        p.where, strata::divide_work(p.where, p.chunks), csr_spmv_kernel{}, p.chunks,
        p.split.data(), a.row_ptr.data() + p.first, a.col.data(), a.val.data(), x, y + p.first));
  }
  strata::wait_all(done);
}

std::vector<spmv_part_info> partitioned_spmv::parts() const {
  std::vector<spmv_part_info> out;
  for (auto const& p : state_->parts) out.push_back({p.where.where, p.first, p.last, p.device});
  return out;
}

}  // namespace apps
