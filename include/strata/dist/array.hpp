// Distributed array types (PARRAY §4.12-4.16, §5.5, Listings 40-41; issue 18 item 5): an
// N-D array whose dimensions are distributed over a grid of a team's ranks — each
// dimension whole, in blocks, cyclic or block-cyclic (ScaLAPACK's 2-D block-cyclic for
// SUMMA) — with each rank's elements stored row-major in a chosen order of the dimensions
// (PARRAY's dimension trees: storing the dimensions swapped is how a distributed type
// describes a transposed array). `copy` between two distributed types over the same
// global index space is the one redistribution operation: scatter, gather, all-to-all and
// mix-to-mix are all copies between types (§4.13-4.16), done as one all-to-all-v of the
// per-pair element sets, packed and unpacked in tiles so that a transpose's strided side
// stays in cache (no separate local transpose: Listing 46's "local adjustment").
//
//   using dist::distribution;
//   dist::array_type<2> rows{.extent = {n, n}, .dist = {distribution::block(),
//   distribution::whole()},
//                            .grid = {p, 1}};
//   auto cols = rows;  // the same elements, distributed by column and stored transposed
//   cols.dist = {distribution::whole(), distribution::block()};
//   cols.grid = {1, p};
//   cols.order = {1, 0};
//   dist::array<double, 2> a(team, rows), t(team, cols);
//   dist::copy(t, a).wait();  // t's local memory: a's rows of the transpose
#pragma once

#include <strata/dist/array_type.hpp>
#include <strata/dist/collectives.hpp>
#include <strata/dist/copy_plan.hpp>
#include <strata/dist/direct.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/error.hpp>
#include <strata/exec.hpp>
#include <strata/runtime.hpp>
#include <strata/vec.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::dist {

/// The local part of a distributed array on this rank (host memory), and its type.
template <class T, std::size_t N>
class array {
  static_assert(std::is_trivially_copyable_v<T>, "dist::array: T must be trivially copyable");

 public:
  using value_type = T;
  /// Collective in spirit (every member makes its part of the same type); checks the
  /// type against the team.
  array(team const& members, array_type<N> const& type) : team_(members), type_(type) {
    detail::check_member(members, "dist::array");
    type_.check(members.size(), "dist::array");
    auto const n = static_cast<std::size_t>(type_.local_extent(members.rank()).product());
    if (n > static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T))
      throw out_of_memory("dist::array: " + std::to_string(n) + " elements of " +
                          std::to_string(sizeof(T)) +
                          " bytes on this rank; expected at most PTRDIFF_MAX bytes");
    // Memory the peers on this node can map (dist/direct.hpp), so copies read it in place.
    block_ = detail::shared_block(members, n * sizeof(T));
    data_ = std::span<T>(static_cast<T*>(block_.data()), n);
    std::uninitialized_fill(data_.begin(), data_.end(), T{});
    strides_ = type_.local_strides(members.rank());
  }
  /// A copy has its own memory (and the same team and type); a move keeps the memory.
  array(array const& o) : array(o.team_, o.type_) {
    std::copy(o.data_.begin(), o.data_.end(), data_.begin());
  }
  array& operator=(array const& o) {
    if (this != &o) *this = array(o);
    return *this;
  }
  array(array&& o) noexcept
      : team_(std::move(o.team_)),
        type_(std::move(o.type_)),
        block_(std::move(o.block_)),
        data_(std::exchange(o.data_, {})),
        strides_(o.strides_),
        staging_(std::move(o.staging_)) {}
  array& operator=(array&& o) noexcept {
    team_ = std::move(o.team_);
    type_ = std::move(o.type_);
    block_ = std::move(o.block_);
    data_ = std::exchange(o.data_, {});
    strides_ = o.strides_;
    staging_ = std::move(o.staging_);
    return *this;
  }
  ~array() = default;

  array_type<N> const& type() const noexcept { return type_; }
  team const& members() const noexcept { return team_; }
  /// This rank's elements, in its storage order.
  std::span<T> local() noexcept { return data_; }
  std::span<T const> local() const noexcept { return data_; }
  /// This rank's local extent per global dimension.
  vec<N> local_extent() const { return type_.local_extent(team_.rank()); }
  /// Whether this rank holds global element i, and a reference to it (PARRAY's global
  /// view of the local part; throws invalid_argument for an element held elsewhere).
  bool holds(vec<N> const& i) const {
    for (std::size_t d = 0; d < N; ++d)
      if (i[d] < 0 || i[d] >= type_.extent[d]) return false;
    return type_.owner_rank(i) == team_.rank();
  }
  T& at(vec<N> const& i) { return data_[offset_of(i)]; }
  T const& at(vec<N> const& i) const { return data_[offset_of(i)]; }
  /// This rank's memory (dist/direct.hpp): what dist::copy tells the peers to map.
  detail::shared_block const& block() const noexcept { return block_; }
  /// Buffers for a copy into this array: the kept ones when no copy holds them.
  std::shared_ptr<detail::copy_staging<T>> staging() const {
    if (staging_.use_count() == 1) return staging_;
    return std::make_shared<detail::copy_staging<T>>();
  }
  /// Calls f(global index, element) for every element held here.
  template <class F>
  void for_each(F&& f) {
    std::array<std::vector<index_t>, N> lists;
    for (std::size_t d = 0; d < N; ++d) lists[d] = type_.owned_by_rank(d, team_.rank());
    vec<N> i{};
    std::array<std::size_t, N> pos{};
    if (data_.empty()) return;
    for (;;) {
      // The pos-th index a rank holds along d is its local index pos (the lists ascend).
      index_t o = 0;
      for (std::size_t d = 0; d < N; ++d) {
        i[d] = lists[d][pos[d]];
        o += static_cast<index_t>(pos[d]) * strides_[d];
      }
      f(i, data_[static_cast<std::size_t>(o)]);
      std::size_t d = N;
      while (d-- > 0) {
        if (++pos[d] < lists[d].size()) break;
        pos[d] = 0;
        if (d == 0) return;
      }
    }
  }

 private:
  std::size_t offset_of(vec<N> const& i) const {
    for (std::size_t d = 0; d < N; ++d)
      if (i[d] < 0 || i[d] >= type_.extent[d])
        throw invalid_argument("dist::array::at: index " + std::to_string(i[d]) + " in dimension " +
                               std::to_string(d) + " is outside the extent " +
                               std::to_string(type_.extent[d]));
    if (!holds(i))
      throw invalid_argument("dist::array::at: the element is held by team rank " +
                             std::to_string(type_.owner_rank(i)) + ", not this rank (" +
                             std::to_string(team_.rank()) + ")");
    index_t o = 0;
    for (std::size_t d = 0; d < N; ++d) o += type_.local_index(d, i[d]) * strides_[d];
    return static_cast<std::size_t>(o);
  }

  team team_;
  array_type<N> type_;
  detail::shared_block block_;
  std::span<T> data_;
  // This rank's storage strides, once: local_strides walks the owned index lists, so
  // per element it made for_each and at() cost O(extent) each (minutes for a 4096^2
  // block-cyclic fill).
  vec<N> strides_{};
  std::shared_ptr<detail::copy_staging<T>> staging_ = std::make_shared<detail::copy_staging<T>>();
};

/// Copies every element of `src` into `dst` (same team, same global extent; any
/// distributions and storage orders): scatter, gather, all-to-all, mix-to-mix and
/// transposes are all this one operation (PARRAY §4.13-4.16). Collective: every member
/// calls it with the same pair of types. The event completes when this rank's part of
/// `dst` is written; `src` and `dst` must stay alive and untouched until then.
template <class T, std::size_t N>
strata::event copy(array<T, N>& dst, array<T, N> const& src) {
  auto const& tm = src.members();
  int const size = tm.size(), me = tm.rank();
  if (dst.members().ranks() != tm.ranks())
    throw invalid_argument("dist::copy: the arrays belong to different teams; expected one");
  if (dst.type().extent != src.type().extent)
    throw invalid_argument(
        "dist::copy: the global extents differ; expected the same elements "
        "distributed two ways");
  auto const& st = src.type();
  auto const& dt = dst.type();
  std::array<std::vector<index_t>, N> src_mine, dst_mine;
  for (std::size_t d = 0; d < N; ++d) {
    src_mine[d] = st.owned_by_rank(d, me);
    dst_mine[d] = dt.owned_by_rank(d, me);
  }
  // Per peer: what this rank sends (its src elements the peer holds in dst) and receives.
  std::vector<std::size_t> scount(static_cast<std::size_t>(size)), sdispl(scount.size()),
      rcount(scount.size()), rdispl(scount.size());
  std::vector<detail::pair_set<N>> sends, recvs;
  std::size_t stotal = 0, rtotal = 0;
  // On one node each rank reads what it needs from the peers' arrays itself.
  bool const direct = size > 1 && detail::direct_access(tm);
  std::vector<detail::pair_set<N>> remote;
  for (int q = 0; q < size; ++q) {
    std::array<std::vector<index_t>, N> out, in;
    for (std::size_t d = 0; d < N; ++d) {
      out[d] = detail::intersect(src_mine[d], dt.owned_by_rank(d, q));
      in[d] = detail::intersect(st.owned_by_rank(d, q), dst_mine[d]);
    }
    sends.push_back(detail::make_pair_set(out, st, me));
    recvs.push_back(detail::make_pair_set(in, dt, me));
    if (direct) remote.push_back(detail::make_pair_set(in, st, q));
    auto const uq = static_cast<std::size_t>(q);
    scount[uq] = q == me ? 0 : sends.back().count();
    rcount[uq] = q == me ? 0 : recvs.back().count();
    sdispl[uq] = stotal;
    rdispl[uq] = rtotal;
    stotal += scount[uq];
    rtotal += rcount[uq];
  }
  // Staging kept in the destination for its next copy (fresh pages cost as much as the
  // copy itself at large sizes); a copy that finds it in use gets its own.
  auto plan = std::make_shared<detail::copy_plan<T, N>>(
      detail::copy_plan<T, N>{std::move(sends),
                              std::move(recvs),
                              std::move(sdispl),
                              std::move(rdispl),
                              size == 1 || direct ? nullptr : dst.staging(),
                              src.local().data(),
                              dst.local().data(),
                              me,
                              std::move(remote),
                              &src.type(),
                              tm,
                              {}});
  if (plan->staging) {
    plan->staging->out.resize(stotal);
    plan->staging->in.resize(rtotal);
  }
  // Pool jobs, not the caller or the MPI thread: this rank's own elements move while the
  // others are packed, sent and unpacked (one thread per peer's part).
  auto host = strata::runtime::current().machine();
  auto local = launch(host, grid(1), [plan](auto const&) { plan->move_own(); });
  if (size == 1) return local;
  if (direct) {
    // At the source's first copy every member gives its block's handle (dist/direct.hpp);
    // once all have (the gather is the sign that every source is ready), each takes its
    // elements from the peers' blocks. Then it counts the copy as pulled in its own block's header,
    // and its event completes once every peer has counted this copy too: nobody reads its source
    // any more. No barrier: a reader writes one word of its own memory, the owner's MPI
    // thread polls the peers' words (mapped) as it polls its requests.
    auto const& block = src.block();
    auto const n = block.copy_started();
    plan->mapped.resize(static_cast<std::size_t>(size));
    strata::event pulled;
    if (auto const& known = block.peers()) {
      // A later copy from this array: each peer's part is read once that peer has
      // started this copy too (its count in its block's header), as the peers get ready.
      plan->peers = known;
      pulled = detail::start_reserved_after(known->gathered, [plan, known, n, host] {
        // The first copy found the members' source types differ: read nothing.
        if (auto err = known->gathered.error()) return strata::event::failed(err);
        return detail::pull_when_started(plan, n, host);
      });
    } else {
      auto peers = std::make_shared<detail::peer_blocks>();
      peers->handles.resize(detail::peer_blocks::words * static_cast<std::size_t>(size));
      auto const h = block.handle();
      // The fourth word: the source's type and element size as this member sees them. A
      // member that passed another array (another size) would have its peers read past
      // its block; every member compares all of them, so all fail alike.
      auto const mine = std::make_shared<std::array<std::uint64_t, detail::peer_blocks::words>>(
          std::array<std::uint64_t, detail::peer_blocks::words>{
              h.address, static_cast<std::uint64_t>(h.fd), h.serial,
              st.fingerprint() ^ (sizeof(T) * 0x9e3779b97f4a7c15ull)});
      auto const gathered = all_gather(tm, std::span<std::uint64_t const>(*mine),
                                       std::span<std::uint64_t>(peers->handles));
      // Later copies from this array wait for `gathered` too: they fail the same way.
      peers->gathered = detail::start_after_event(gathered, [peers, size] {
        auto const& w = peers->handles;
        for (int q = 1; q < size; ++q)
          if (w[detail::peer_blocks::words * static_cast<std::size_t>(q) + 3] != w[3])
            return strata::event::failed(std::make_exception_ptr(invalid_argument(
                "dist::copy: team rank " + std::to_string(q) +
                " passed a source array of another type (extent, distribution, grid, order "
                "or element size) than team rank 0; expected the same arrays on every member")));
        return strata::event::completed();
      });
      block.keep_peers(peers);
      plan->peers = peers;
      pulled = launch(after(peers->gathered), host, grid(size),
                      [plan, mine](auto const& self) { plan->pull(self.global_index()); });
    }
    // Counted even when a read failed (this rank's event fails): the peers must not wait
    // for a count that never comes.
    return detail::start_reserved_after(when_all(after(local, pulled)), [plan, &block, n, size] {
      block.pulls_done();
      std::vector<detail::block_handle> peers;
      for (int q = 0; q < size; ++q) peers.push_back(plan->handle_of(q));
      return detail::when_peers_pulled(plan->members, std::move(peers), n, plan->mapped);
    });
  }
  auto packed =
      launch(host, grid(size), [plan](auto const& self) { plan->pack(self.global_index()); });
  // The exchange's place among the team's collectives is taken now, in call order.
  auto const exchange = detail::reserve_collective(tm);
  auto moved = detail::start_reserved_after(packed, [plan, tm, scount, rcount, exchange] {
    return detail::all_to_all_v(tm, std::span<T const>(plan->staging->out), scount, plan->sdispl,
                                std::span<T>(plan->staging->in), rcount, plan->rdispl, exchange);
  });
  auto unpacked = launch(after(moved), host, grid(size),
                         [plan](auto const& self) { plan->unpack(self.global_index()); });
  return when_all(after(local, unpacked));
}

}  // namespace strata::dist
