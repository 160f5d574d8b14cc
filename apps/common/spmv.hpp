// SpMV over several places, the Phalanx way (§V-A): "we simply partition the matrix by
// rows and distribute them evenly ... we replicate the vector x on every place". Host
// places read the matrix where it is; a device gets its rows copied once into its own
// memory, and each product copies x in and its part of y out on the device's queue, so
// devices' copies and kernels overlap one another and the host parts.
#pragma once

#include "sparse.hpp"

#include <strata/strata.hpp>

#include <memory>
#include <string>
#include <vector>

namespace apps {

/// y[r] = row r of A times x for the rows of each chunk [split[c], split[c + 1]); the
/// chunks hold about equal nonzeros, so power-law rows do not unbalance the threads.
/// Indices are local to the part: row_ptr[r] indexes col and val.
struct csr_spmv_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t chunks, csr_index const* split,
                            csr_index const* row_ptr, csr_index const* col, double const* val,
                            double const* x, double* y) const {
    for (auto c : self.elements(chunks))
      for (csr_index r = split[c]; r < split[c + 1]; ++r) {
        double s = 0;
        for (csr_index k = row_ptr[r]; k < row_ptr[r + 1]; ++k) s += val[k] * x[col[k]];
        y[r] = s;
      }
  }
};

/// Cuts rows [first, last) into `parts` ranges of about equal weight, the weight of a row
/// being its nonzeros plus one (the x, y and row_ptr traffic); returns parts + 1 bounds.
std::vector<csr_index> split_rows(csr_matrix const& a, csr_index first, csr_index last, int parts,
                                  std::vector<double> const& shares = {});

/// One place's share of a partitioned SpMV.
struct spmv_part_info {
  strata::place where;
  csr_index first_row;
  csr_index last_row;
  bool device;  // a copy of its rows lives in the device's memory
};

/// A matrix partitioned by rows over places (host places, sim devices). The parts are
/// sized by each place's processors times its speed (its share of the machine), and each
/// part is cut into chunks of equal nonzeros for its threads.
class partitioned_spmv {
 public:
  /// `a` must outlive this object (host parts read it in place).
  partitioned_spmv(csr_matrix const& a, std::vector<strata::target> const& where);
  ~partitioned_spmv();
  partitioned_spmv(partitioned_spmv&&) noexcept;
  partitioned_spmv& operator=(partitioned_spmv&&) noexcept;

  /// y = A x: x has a.cols elements, y a.rows, both in host memory. Blocks until done;
  /// a kernel's or copy's failure is rethrown.
  void multiply(double const* x, double* y);
  std::vector<spmv_part_info> parts() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace apps
