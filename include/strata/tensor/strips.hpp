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

 private:
  struct slab {
    void* data = nullptr;
    std::uint32_t memory = 0;
    std::shared_ptr<void> keep;
    index_t capacity = 0;  // rows
    index_t offset = 0;    // the slab row where the strip's padded box starts
  };

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

  /// A re-cut made but not yet in effect (prepare); commit puts it in effect.
  struct prepared {
    tensor<T, 2> t;
    std::vector<index_t> cuts;
    index_t rows_copied = 0;
    std::size_t reallocations = 0;

   private:
    friend class strip_store;
    std::vector<char> slabs_ready;  // non-empty once prepared
    std::vector<slab> slabs;
    tensor_spec<2> spec;
  };

  /// Re-cuts the strips at `cuts` (strips + 1 values, 0 .. rows, increasing) and returns
  /// the new tensor (get()): prepare, then commit.
  tensor<T, 2> const& recut(std::vector<index_t> const& cuts, bool move) {
    commit(prepare(cuts, move));
    return t_;
  }

  /// The tensor cut at `cuts`, not yet this store's. With `move`, every new strip receives,
  /// from each old strip, the rows that strip owned — its interior, and its padding rows
  /// where the grid ends — as whole padded rows (the edge columns come along); rows that
  /// stay in their strip's slab are not touched; then each strip's padding rows between
  /// strips are copied whole (corners included) from the strips that own them. Without
  /// `move` only the shape changes (contents undefined). Work issued on the old tensor
  /// must have completed; this returns when the copies have. It writes only rows the old
  /// strips did not own (padding and spare rows), so if it throws, or its result is
  /// dropped, the store is unchanged and its tensor still valid.
  prepared prepare(std::vector<index_t> const& cuts, bool move) const {
    auto const& oc = t_.cuts(0);
    index_t const rows = spec_.extent[0], pad = spec_.padding;
    if (cuts.size() != oc.size() || cuts.front() != 0 || cuts.back() != rows ||
        std::adjacent_find(cuts.begin(), cuts.end(), std::greater_equal<>{}) != cuts.end())
      throw invalid_argument("strip_store::recut: " + std::to_string(cuts.size()) +
                             " cut values; expected " + std::to_string(oc.size()) +
                             " increasing rows from 0 to " + std::to_string(rows));
    auto const strips = oc.size() - 1;
    prepared p;
    p.cuts = cuts;
    p.slabs = slabs_;
    std::vector<char> fresh(strips, 0);
    for (std::size_t s = 0; s < strips; ++s) {
      auto& sl = p.slabs[s];
      // The same global row stays at the same slab row: the padded box slides.
      index_t const off = sl.offset + (cuts[s] - oc[s]);
      if (off >= 0 && off + (cuts[s + 1] - cuts[s]) + 2 * pad <= sl.capacity) {
        sl.offset = off;
      } else {
        sl = make_slab(s, cuts[s + 1] - cuts[s]);
        fresh[s] = 1;
        ++p.reallocations;
      }
    }
    p.spec = spec_;
    p.spec.weights[0].clear();
    for (std::size_t s = 0; s < strips; ++s)
      p.spec.weights[0].push_back(static_cast<double>(cuts[s + 1] - cuts[s]));
    std::vector<block_storage> storage;
    for (std::size_t s = 0; s < strips; ++s) storage.push_back(at(p.slabs[s]));
    p.t = tensor<T, 2>(devices_, p.spec, storage);  // refuses a strip thinner than the padding
    if (!(p.t.cuts(0) == cuts))  // weights of whole rows give back the same lines
      throw error("strip_store::recut: the strips came out at other rows than the cuts");
    if (move) {
      // Rows a strip owns: its interior, plus the padding rows past the grid's ends.
      auto owned = [&](std::vector<index_t> const& c, std::size_t s) {
        return std::pair{c[s] - (c[s] == 0 ? pad : 0), c[s + 1] + (c[s + 1] == rows ? pad : 0)};
      };
      index_t const width = spec_.extent[1] + 2 * pad;
      // Rows [lo, hi) of `from` strip r (cut at fc) into strip s of the new tensor.
      auto rows_into = [&](std::vector<event>& done, std::size_t s, index_t lo, index_t hi,
                           tensor<T, 2> const& from, std::vector<index_t> const& fc,
                           std::size_t r) {
        auto [olo, ohi] = owned(fc, r);
        lo = std::max(lo, olo), hi = std::min(hi, ohi);
        if (hi <= lo) return;
        done.push_back(copy_box(after{}, p.t, s, vec<2>{lo - cuts[s], -pad}, from, r,
                                vec<2>{lo - fc[r], -pad}, vec<2>{hi - lo, width}));
        p.rows_copied += hi - lo;
      };
      std::vector<event> moved, padding;
      for (std::size_t s = 0; s < strips; ++s)
        for (std::size_t r = 0; r < strips; ++r)
          if (r != s || fresh[s]) {  // else already in place
            auto [nlo, nhi] = owned(cuts, s);
            rows_into(moved, s, nlo, nhi, t_, oc, r);
          }
      when_all(after(moved)).wait();
      // Then the padding rows between strips, from their owners' (now settled) rows.
      index_t const before = p.rows_copied;
      for (std::size_t s = 0; s < strips; ++s)
        for (std::size_t r = 0; r < strips; ++r)
          if (r != s) {
            if (cuts[s] > 0) rows_into(padding, s, cuts[s] - pad, cuts[s], p.t, cuts, r);
            if (cuts[s + 1] < rows)
              rows_into(padding, s, cuts[s + 1], cuts[s + 1] + pad, p.t, cuts, r);
          }
      when_all(after(padding)).wait();
      p.rows_copied = before;  // padding rows are not rows that changed strips
    }
    p.slabs_ready.assign(1, 1);
    return p;
  }

  /// Puts a prepared re-cut in effect (it must come from this store's current state).
  void commit(prepared&& p) noexcept {
    if (p.slabs_ready.empty()) return;
    slabs_ = std::move(p.slabs);
    spec_ = std::move(p.spec);
    t_ = std::move(p.t);
    reallocations_ += p.reallocations;
    rows_copied_ += p.rows_copied;
  }

 private:
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
