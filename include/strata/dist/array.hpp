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

#include <strata/dist/agreement.hpp>
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
#include <exception>
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
        staging_(std::move(o.staging_)),
        last_write_(std::move(o.last_write_)),
        reads_(std::move(o.reads_)) {}
  array& operator=(array&& o) noexcept {
    team_ = std::move(o.team_);
    type_ = std::move(o.type_);
    block_ = std::move(o.block_);
    data_ = std::exchange(o.data_, {});
    strides_ = o.strides_;
    staging_ = std::move(o.staging_);
    last_write_ = std::move(o.last_write_);
    reads_ = std::move(o.reads_);
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
  /// dist::copy's ordering: the last copy into this array, and the copies from it since.
  strata::event pending_write() const { return last_write_; }
  std::vector<strata::event> pending_reads() const { return reads_; }
  void note_write(strata::event const& e) const {
    last_write_ = e;
    reads_.clear();
  }
  void note_read(strata::event const& e) const {
    std::erase_if(reads_, [](strata::event const& r) { return r.ready(); });
    reads_.push_back(e);
  }
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
  // The copies this array takes part in, for the next copy's ordering (dist::copy).
  mutable strata::event last_write_;
  mutable std::vector<strata::event> reads_;
};

namespace detail {

/// What each member brings to a copy's agreement: the all-gather every copy between two
/// or more members starts, which also says that every member's source is ready (a member
/// joins it once the earlier copies into its source have written it).
struct copy_agreement {
  std::uint64_t src_type = 0, dst_type = 0;  // fingerprints, with the element size
  block_handle source;                       // its source block (the direct protocol)
  local_outcome outcome;                     // its checks that only it can see
};

/// A copy's exchange when it moves nothing (its agreement failed): the reserved place is
/// started all the same, as on every other member.
inline strata::event empty_exchange(team const& t, std::uint64_t place) {
  std::vector<std::size_t> const zero(static_cast<std::size_t>(t.size()));
  return all_to_all_v(t, std::span<char const>(), zero, zero, std::span<char>(), zero, zero, place);
}

}  // namespace detail

/// Copies every element of `src` into `dst` (same team, same global extent; any
/// distributions and storage orders): scatter, gather, all-to-all, mix-to-mix and
/// transposes are all this one operation (PARRAY §4.13-4.16). Collective: every member
/// calls it with the same pair of types, in the same order as its other copies and
/// collectives on the team. The event completes when this rank's part of `dst` is
/// written; `src` and `dst` must stay alive, and untouched except by other dist::copy
/// calls, until then. Copies are ordered by their arrays like tasks by their data: a copy
/// from an array waits for the earlier copies into it, and a copy into an array for the
/// earlier copies from and into it (on every member: a peer reads this rank's source only
/// once this rank has written it). A mistake only one member can see (its destination of
/// another team or extent) throws there and fails every other member's event with the
/// same invalid_argument, naming that team rank; members that pass types that differ all
/// fail alike.
template <class T, std::size_t N>
strata::event copy(array<T, N>& dst, array<T, N> const& src) {
  auto const& tm = src.members();
  detail::check_member(tm, "dist::copy");
  int const size = tm.size(), me = tm.rank();
  std::exception_ptr mistake;
  try {
    if (dst.members().ranks() != tm.ranks())
      throw invalid_argument("dist::copy: the arrays belong to different teams; expected one");
    if (dst.type().extent != src.type().extent)
      throw invalid_argument(
          "dist::copy: the global extents differ; expected the same elements "
          "distributed two ways");
  } catch (...) {
    if (size == 1) throw;
    mistake = std::current_exception();
  }
  auto const& st = src.type();
  auto const& dt = dst.type();
  auto host = strata::runtime::current().machine();
  // What this copy waits for: the copies into its source, and those from and into its
  // destination (dist::array keeps them).
  std::vector<strata::event> deps = dst.pending_reads();
  deps.push_back(src.pending_write());
  deps.push_back(dst.pending_write());
  std::erase_if(deps, [](strata::event const& e) { return e.ready(); });
  // Only for order: an earlier copy's failure was reported by its own event.
  auto ready = strata::event::completed();
  if (!deps.empty()) {
    ready = strata::event::pending();
    when_all(after(std::move(deps))).then([ready]() mutable { ready.complete(); });
  }
  // The agreement, at this copy's place among the team's collectives (taken now, in call
  // order), started once the source is ready.
  bool const direct = size > 1 && detail::direct_access(tm);
  auto const& block = src.block();
  std::uint64_t n = 0;
  strata::event agreed;
  std::uint64_t exchange = 0;
  std::shared_ptr<std::vector<detail::copy_agreement>> all;
  if (size > 1) {
    n = block.copy_started();
    auto mine = std::make_shared<detail::copy_agreement>();
    mine->src_type = st.fingerprint() ^ (sizeof(T) * 0x9e3779b97f4a7c15ull);
    mine->dst_type = dt.fingerprint() ^ (sizeof(T) * 0x9e3779b97f4a7c15ull);
    mine->source = block.handle();
    if (mistake) mine->outcome = detail::local_outcome::of(mistake);
    all = std::make_shared<std::vector<detail::copy_agreement>>(static_cast<std::size_t>(size));
    auto const slot = detail::reserve_collective(tm);
    if (!direct) exchange = detail::reserve_collective(tm);
    auto gathered = detail::start_reserved_after(ready, [tm, mine, all, slot] {
      return detail::start_collective(tm,
                                      {.kind = detail::collective::all_gather,
                                       .in = mine.get(),
                                       .out = all->data(),
                                       .count = 1,
                                       .elem_size = sizeof(detail::copy_agreement)},
                                      slot);
    });
    // Every member reads the same outcomes, so all fail alike, with the first failing team
    // rank's reason, or go on together.
    // (`mine` too: MPI reads it until the gather completes.)
    agreed = detail::start_after_event(gathered, [all, mine, size] {
      auto const& a = *all;
      try {
        detail::agree("dist::copy", size, [&](int r) -> detail::local_outcome const& {
          return a[static_cast<std::size_t>(r)].outcome;
        });
        for (int q = 1; q < size; ++q) {
          auto const& o = a[static_cast<std::size_t>(q)];
          if (o.src_type != a[0].src_type || o.dst_type != a[0].dst_type)
            throw invalid_argument(
                "dist::copy: team rank " + std::to_string(q) + " passed a " +
                (o.src_type != a[0].src_type ? "source" : "destination") +
                " array of another type (extent, distribution, grid, order or element size) "
                "than team rank 0; expected the same arrays on every member");
        }
        return strata::event::completed();
      } catch (...) {
        return strata::event::failed(std::current_exception());
      }
    });
    if (mistake) {
      // Nothing is read or written here; the counts and the exchange's place are kept as
      // on the other members, which learn of this mistake from the agreement.
      if (direct) {
        block.pulls_done();  // it reads no peer's block (and `src` may go when it throws)
      } else {
        (void)detail::start_reserved_after(
            agreed, [tm, exchange] { return detail::empty_exchange(tm, exchange); });
      }
      std::rethrow_exception(mistake);
    }
  }

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
                              direct ? nullptr : dst.staging(),
                              src.local().data(),
                              dst.local().data(),
                              me,
                              std::move(remote),
                              &src.type(),
                              tm,
                              {}});
  // Every member of the team counted as sharing this node's last-level cache (on one
  // node they do; across nodes the threshold is lower than it could be).
  plan->stream = dst.local().size() * sizeof(T) >= detail::stream_threshold(host, size);
  if (plan->staging) {
    plan->staging->out.resize(stotal);
    plan->staging->in.resize(rtotal);
  }
  // Pool jobs, not the caller or the MPI thread: this rank's own elements move while the
  // others are packed, sent and unpacked (one thread per peer's part).
  auto local = launch(after(ready), host, grid(1), [plan](auto const&) { plan->move_own(); });
  strata::event done;
  if (size == 1) {
    done = local;
  } else if (direct) {
    // Once every member has joined the agreement (its source is written), each takes its
    // elements from the peers' blocks. Then it counts the copy as pulled in its own
    // block's header, and its event completes once every peer has counted this copy too:
    // nobody reads its source any more. A reader writes one word of its own memory; the
    // owner's MPI thread polls the peers' words (mapped) as it polls its requests.
    plan->mapped.resize(static_cast<std::size_t>(size));
    auto pulled = launch(after(agreed), host, grid(size), [plan, all](auto const& self) {
      plan->pull_from(self.global_index(),
                      (*all)[static_cast<std::size_t>(self.global_index())].source);
    });
    // Counted even when a read failed (this rank's event fails): the peers must not wait
    // for a count that never comes.
    done =
        detail::start_reserved_after(when_all(after(local, pulled)), [plan, all, &block, n, size] {
          block.pulls_done();
          std::vector<detail::block_handle> peers;
          for (int q = 0; q < size; ++q)
            peers.push_back((*all)[static_cast<std::size_t>(q)].source);
          return detail::when_peers_pulled(plan->members, std::move(peers), n, plan->mapped);
        });
  } else {
    auto packed = launch(after(ready), host, grid(size),
                         [plan](auto const& self) { plan->pack(self.global_index()); });
    // The exchange goes at its reserved place, after the agreement: a failed agreement
    // exchanges nothing (on every member alike).
    auto moved = detail::start_reserved_after(
        when_all(after(packed, agreed)), [plan, tm, scount, rcount, exchange, agreed] {
          if (agreed.error()) return detail::empty_exchange(tm, exchange);
          return detail::all_to_all_v(tm, std::span<T const>(plan->staging->out), scount,
                                      plan->sdispl, std::span<T>(plan->staging->in), rcount,
                                      plan->rdispl, exchange);
        });
    auto unpacked = launch(after(moved), host, grid(size),
                           [plan](auto const& self) { plan->unpack(self.global_index()); });
    done = when_all(after(local, unpacked));
  }
  src.note_read(done);
  dst.note_write(done);
  return done;
}

}  // namespace strata::dist
