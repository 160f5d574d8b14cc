// Horizontal strips of a 2-D tensor whose cut lines move (hybrid-2d-stencil-scheme §9, the
// dynamic re-partitioning of its future work): each strip lives in a slab of its device's
// memory with spare rows above and below its padded box, so moving a cut line copies only
// the rows that change strips (from the neighbour that held them); the rows a strip keeps
// stay where they are. A GPU code re-partitioning by hand would keep its allocations and
// shift an offset the same way.
#pragma once

#include <strata/memory/allocate.hpp>
#include <strata/tensor/tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata::tensor_detail {

template <class T>
class strip_store {
  static_assert(!cell_traits<T>::is_record, "strip_store: plain cells only");

 public:
  strip_store() = default;
  /// A tensor of `spec` (one partition per device along dimension 0, one along dimension
  /// 1) on `devices`, each strip with `spare` rows of room above and below its padded box.
  strip_store(std::vector<place> devices, tensor_spec<2> const& spec, index_t spare)
      : devices_(std::move(devices)), spec_(spec), spare_(std::max<index_t>(spare, 0)) {
    auto const geo = make_geometry(spec_);
    auto const& cuts = geo.cuts[0];
    std::vector<block_storage> storage;
    for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
      slabs_.push_back(make_slab(s, cuts[s + 1] - cuts[s]));
      storage.push_back(at(slabs_.back()));
    }
    t_ = tensor<T, 2>(devices_, spec_, storage);
  }

  tensor<T, 2> const& get() const noexcept { return t_; }
  tensor<T, 2>& get() noexcept { return t_; }
  /// Slabs allocated anew by recut (a strip outgrew its spare rows), and rows copied.
  std::size_t reallocations() const noexcept { return reallocations_; }
  index_t rows_copied() const noexcept { return rows_copied_; }

  /// Re-cuts the strips at `cuts` (strips + 1 values, 0 .. rows, increasing) and returns
  /// the new tensor (get()). With `move`, every new strip receives, from each old strip,
  /// the rows that strip owned — its interior, and its padding rows where the grid ends —
  /// whole padded rows (the edge columns come along); rows that stay in their strip's slab
  /// are not touched. Without `move` only the shape changes (contents undefined). The
  /// padding between strips is not loaded (load_padding does that). Work issued on the
  /// old tensor must have completed; this returns when the copies have.
  tensor<T, 2> const& recut(std::vector<index_t> const& cuts, bool move) {
    auto const old = t_;
    auto const& oc = old.cuts(0);
    index_t const rows = spec_.extent[0], pad = spec_.padding;
    if (cuts.size() != oc.size() || cuts.front() != 0 || cuts.back() != rows ||
        std::adjacent_find(cuts.begin(), cuts.end(), std::greater_equal<>{}) != cuts.end())
      throw invalid_argument("strip_store::recut: " + std::to_string(cuts.size()) +
                             " cut values; expected " + std::to_string(oc.size()) +
                             " increasing rows from 0 to " + std::to_string(rows));
    auto const strips = oc.size() - 1;
    // New slabs and spec are committed only once the new tensor exists (a strip thinner
    // than the padding is refused by the tensor, and leaves this store as it was).
    auto slabs = slabs_;
    std::vector<char> fresh(strips, 0);
    for (std::size_t s = 0; s < strips; ++s) {
      auto& sl = slabs[s];
      // The same global row stays at the same slab row: the padded box slides.
      index_t const off = sl.offset + (cuts[s] - oc[s]);
      if (off >= 0 && off + (cuts[s + 1] - cuts[s]) + 2 * pad <= sl.capacity) {
        sl.offset = off;
      } else {
        sl = make_slab(s, cuts[s + 1] - cuts[s]);
        fresh[s] = 1;
      }
    }
    auto spec = spec_;
    spec.weights[0].clear();
    for (std::size_t s = 0; s < strips; ++s)
      spec.weights[0].push_back(static_cast<double>(cuts[s + 1] - cuts[s]));
    std::vector<block_storage> storage;
    for (std::size_t s = 0; s < strips; ++s) storage.push_back(at(slabs[s]));
    tensor<T, 2> next(devices_, spec, storage);
    if (!(next.cuts(0) == cuts))  // weights of whole rows give back the same lines
      throw error("strip_store::recut: the strips came out at other rows than the cuts");
    slabs_ = std::move(slabs);
    spec_ = std::move(spec);
    for (auto f : fresh) reallocations_ += f ? 1 : 0;
    if (move) {
      // Rows a strip owns: its interior, plus the padding rows past the grid's ends.
      auto owned = [&](std::vector<index_t> const& c, std::size_t s) {
        return std::pair{c[s] - (c[s] == 0 ? pad : 0), c[s + 1] + (c[s + 1] == rows ? pad : 0)};
      };
      index_t const width = spec_.extent[1] + 2 * pad;
      std::vector<event> done;
      for (std::size_t s = 0; s < strips; ++s)
        for (std::size_t r = 0; r < strips; ++r) {
          if (r == s && !fresh[s]) continue;  // already in place
          auto [nlo, nhi] = owned(cuts, s);
          auto [olo, ohi] = owned(oc, r);
          index_t const lo = std::max(nlo, olo), hi = std::min(nhi, ohi);
          if (hi <= lo) continue;
          done.push_back(copy_box(after{}, next, s, vec<2>{lo - cuts[s], -pad}, old, r,
                                  vec<2>{lo - oc[r], -pad}, vec<2>{hi - lo, width}));
          rows_copied_ += hi - lo;
        }
      when_all(after(done)).wait();
    }
    t_ = std::move(next);
    return t_;
  }

 private:
  struct slab {
    void* data = nullptr;
    std::uint32_t memory = 0;
    std::shared_ptr<void> keep;
    index_t capacity = 0;  // rows
    index_t offset = 0;    // the slab row where the strip's padded box starts
  };

  /// A slab for strip s of `rows` rows, with spare rows above and below.
  slab make_slab(std::size_t s, index_t rows) const {
    slab sl;
    auto const& where = devices_[s % devices_.size()];
    index_t const pad = spec_.padding;
    sl.capacity = rows + 2 * pad + 2 * spare_;
    sl.offset = spare_;
    auto const cells = detail::mul_checked(static_cast<std::size_t>(sl.capacity),
                                           static_cast<std::size_t>(spec_.extent[1] + 2 * pad),
                                           "strip_store: slab cells");
    visit_space(space_for(where), [&](auto sp) {
      using S = decltype(sp);
      if constexpr (S::id == space_id::host || S::id == space_id::sim || S::id == space_id::cuda) {
        auto p = allocate<T, S>(where, cells);
        sl.data = p.get();
        sl.memory = p.place_id();
        sl.keep = std::shared_ptr<void>(p.get(), [p](void*) { deallocate(p); });
      } else {
        throw invalid_argument("strip_store: a place whose memory is not host, sim or cuda");
      }
    });
    return sl;
  }

  block_storage at(slab const& sl) const {
    auto const row = static_cast<std::size_t>(spec_.extent[1] + 2 * spec_.padding);
    return {static_cast<T*>(sl.data) + static_cast<std::size_t>(sl.offset) * row, sl.memory,
            sl.keep};
  }

  std::vector<place> devices_;
  tensor_spec<2> spec_;
  index_t spare_ = 0;
  std::vector<slab> slabs_;
  tensor<T, 2> t_;
  std::size_t reallocations_ = 0;
  index_t rows_copied_ = 0;
};

}  // namespace strata::tensor_detail
