// Distributed tensors (issue 18 item 6; Ripple §4.1's partitions, one level up): a global
// N-D grid split along dimension 0 over the ranks of a team, each rank's rows a
// strata::tensor over that rank's own places (host PUs, sim or CUDA devices) with its own
// partitions and padding. The halo exchange between ranks is the local tensor's edge
// loader: wherever the tensor layer fills a block's padding (`load_padding`,
// `concurrent_padded_access` / `exclusive_padded_access` in a graph or `for_each_cell`),
// a block on a face shared with another rank sends its first (last) `padding` rows to that
// rank and receives the rank's last (first) rows into its padding. So one kernel source and
// one access specifier serve devices and ranks alike, and a block whose faces are all local
// computes while the rows of the others are in flight (Phalanx §IV-C: communication as
// events in the same dependency graph).
//
//   dist::tensor<double, 2> a(rt.world(), {4096, 4096}, {host},
//                             {.partitions = {1, 1}, .sub_partitions = {4, 1}, .padding = 1});
//   dist::set_boundary(a, boundary::constant<double>{0.0});
//   for_each_cell(jacobi, concurrent_padded_access(a.local()), b.local()).wait();
//
// Collective rules (as MPI's): every member constructs the tensor with the same global
// extent, padding and column partitions, and fills its padding the same number of times
// in the same order (each block face keeps an exchange count; the k-th exchanges of two
// neighbours match). Rows are exchanged with their padding columns, so corners are right
// after one exchange. Plain cells (records: not yet, docs/dist.md).
#pragma once

#include <strata/dist/agreement.hpp>
#include <strata/dist/collectives.hpp>
#include <strata/dist/direct.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/tensor.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace strata::dist {

template <class T, std::size_t N>
class tensor;

namespace detail {

/// The rows a block exchanges across one face: host staging for what it sends and what it
/// receives, and the previous exchange of this face (the next one reuses the buffers).
template <class T>
struct face_link {
  int peer = -1;  // team rank on the other side; -1: no rank there (a domain edge)
  std::vector<T> out, in;
  std::atomic<std::uint32_t> count{0};  // exchanges, for the messages' tags (they wrap)
  std::uint64_t exchanges = 0;          // the same, under `mutex`, on one node (no wrap)
  std::mutex mutex;
  strata::event last = strata::event::completed();
  // On one node (docs/dist.md "Halo rows on one node"): this face's block (where the rows
  // it sends are, its counts in the header), and the peer's, once resolved for
  // `resolved_peer` (set_boundary may give a face its peer after construction).
  shared_block ctl;
  bool direct = false;
  int resolved_peer = -1;
  block_handle peer_ctl;
  std::shared_ptr<void const> peer_mapped;
};

/// What each rank tells every other about one of its faces (per side and column block):
/// its control block, and whether the face can exchange on one node (a host block whose
/// control block was made).
struct face_info {
  block_handle ctl;
  std::int64_t usable = 0;
};

template <class T, std::size_t N>
struct dist_tensor_state {
  team members;                   // the tensor's own communicator (tags are per tensor)
  vec<N> extent{};                // global
  std::vector<index_t> row_cuts;  // team size + 1: rank r holds rows [cuts[r], cuts[r+1])
  strata::tensor<T, N> local;
  tensor_detail::edge_loader policy;  // the user's boundary policy at the global edges
  // Per local block: [0] the face below row 0 (towards rank r - 1), [1] past the last row.
  std::vector<std::array<std::unique_ptr<face_link<T>>, 2>> faces;
  std::size_t column_blocks = 1;  // blocks per row of blocks (tags name the column)
  // On one node: every member's face_info, [rank][side][column] (empty: messages only).
  std::vector<face_info> direct_faces;
};

/// The column block (mixed index over dimensions 1..) of local block `b`: faces with the
/// same column on two ranks exchange with each other.
template <class T, std::size_t N>
std::size_t column_of(strata::tensor<T, N> const& t, std::size_t b) {
  auto const coord = t.state().geo.coord(b);
  std::size_t column = 0;
  for (std::size_t d = 1; d < N; ++d)
    column = column * static_cast<std::size_t>(t.state().geo.blocks[d]) +
             static_cast<std::size_t>(coord[d]);
  return column;
}

/// Whether face `f` (of `side`, `column`) exchanges on one node with its peer: both sides
/// said their face can (the same answer on both, from the same records). Under f.mutex.
template <class T, std::size_t N>
bool direct_face(dist_tensor_state<T, N>& s, face_link<T>& f, int side, std::size_t column) {
  if (s.direct_faces.empty()) return false;
  if (f.resolved_peer == f.peer) return f.direct;
  auto const columns = s.column_blocks;
  auto at = [&](int rank, int sd) -> face_info const& {
    return s.direct_faces[(static_cast<std::size_t>(rank) * 2 + static_cast<std::size_t>(sd)) *
                              columns +
                          column];
  };
  auto const& mine = at(s.members.rank(), side);
  auto const& theirs = at(f.peer, 1 - side);
  f.direct = mine.usable != 0 && theirs.usable != 0;
  if (f.direct) {
    f.peer_ctl = theirs.ctl;
    f.peer_mapped = theirs.ctl.fd >= 0 ? map_peer_block(s.members, f.peer, theirs.ctl) : nullptr;
  }
  f.resolved_peer = f.peer;
  return f.direct;
}

/// Tags: direction (rows travelling up or down), column block and exchange count, within
/// MPI's guaranteed 32767. Messages with equal (source, tag) match in order, so counts
/// that wrap around still pair up.
inline constexpr index_t max_column_blocks = 16384;
/// Column blocks up to which faces on one node exchange through memory files (two each).
inline constexpr std::size_t max_direct_columns = 32;
inline int face_tag(std::uint32_t count, std::size_t column, std::size_t columns, int down) {
  auto const window = static_cast<std::uint32_t>(max_column_blocks / static_cast<index_t>(columns));
  return static_cast<int>(((count % window) * columns + column) * 2 + down);
}

// `keep` holds the state alive until the transfers it starts have completed.
template <class T, std::size_t N>
strata::event exchange_face(std::shared_ptr<dist_tensor_state<T, N>> const& keep, std::size_t b,
                            int side, strata::event const& ready) {
  auto& s = *keep;
  auto& f = *s.faces[b][static_cast<std::size_t>(side)];
  auto const& t = s.local;
  auto const& blk = t.block(b);
  index_t const p = t.padding();
  // The box sent: the block's first (side 0) or last (side 1) p rows, with their padding
  // columns; the box received: the p padding rows on that side.
  vec<N> lo{}, ext{}, in_lo{};
  for (std::size_t d = 1; d < N; ++d) {
    lo[d] = in_lo[d] = -p;
    ext[d] = blk.extent[d] + 2 * p;
  }
  ext[0] = p;
  lo[0] = side == 0 ? 0 : blk.extent[0] - p;
  in_lo[0] = side == 0 ? -p : blk.extent[0];
  auto const cells = static_cast<std::size_t>(ext.product());
  std::size_t const column = column_of(t, b);
  // Counted in the order the exchanges are chained (two threads may fill one block's
  // padding at once): on one node the k-th exchanges of two neighbours pair up by count.
  std::lock_guard lock(f.mutex);
  auto const k = f.count.fetch_add(1, std::memory_order_relaxed);
  auto const n = ++f.exchanges;
  // Rows sent from side 0 travel up (to rank r - 1, which receives them past its last row).
  int const send_tag = face_tag(k, column, s.column_blocks, side == 0 ? 0 : 1);
  int const recv_tag = face_tag(k, column, s.column_blocks, side == 0 ? 1 : 0);
  auto const prev = f.last;
  if (t.space_of(b) == space_id::host && direct_face(s, f, side, column)) {
    // Both ranks on this node: each says where its rows are in its face's block and
    // reads the peer's straight from the peer's tensor into its padding, counted in the
    // blocks' headers instead of messages; the exchange ends once the peer has read this
    // rank's rows too (then they may be written again, or freed), as a send from the
    // tensor's memory ends.
    auto const src = t.template local_view<host_space>(b, lo, ext).data().get();
    auto const dst = t.template local_view<host_space>(b, in_lo, ext).data().get();
    auto const start = when_all(after(ready, prev));
    // The peer as it is now (set_boundary may change it for later exchanges).
    auto publish = [keep, &f, src, dst, bytes = cells * sizeof(T), n, peer = f.peer,
                    peer_ctl = f.peer_ctl,
                    peer_mapped = f.peer_mapped](std::exception_ptr failed) -> strata::event {
      // No copy here: the peer reads the rows where they are, once (a copy into this
      // face's block first, which the peer then copied out of its mapping, cost two
      // passes over the rows: 0.34 of MPI's single-copy exchange at 512 KiB rows on the
      // development VM, session 59). A failed start (the policy, an earlier exchange) is
      // published too, so the peer fails this exchange rather than wait for it.
      auto* slot = static_cast<halo_slot*>(f.ctl.data());
      slot->address.store(reinterpret_cast<std::uintptr_t>(src), std::memory_order_relaxed);
      slot->bytes.store(failed ? halo_failed : bytes, std::memory_order_relaxed);
      f.ctl.copy_started();  // after the slot (release); counted n here as on the peer
      if (failed) return strata::event::failed(failed);
      return pull_halo(keep->members, peer, f.ctl, peer_ctl, peer_mapped, dst, bytes, n, keep);
    };
    f.last = start_when_done(start, std::move(publish));
    return f.last;
  }
  if (t.space_of(b) == space_id::host) {
    // Rows with their padding columns are one contiguous run of the block's padded box:
    // MPI sends from and receives into the tensor itself, as a hand-written exchange
    // would. The receive starts once the policy has written that padding (it overwrites).
    auto out = t.template local_view<host_space>(b, lo, ext);
    auto in = t.template local_view<host_space>(b, in_lo, ext);
    auto const start = when_all(after(ready, prev));
    auto sent = start_after_event(start, [keep, &f, send_tag, p = out.data().get(), cells] {
      return send(keep->members, f.peer, send_tag, std::span<T const>(p, cells));
    });
    auto received = start_after_event(start, [keep, &f, recv_tag, p = in.data().get(), cells] {
      return recv(keep->members, f.peer, recv_tag, std::span<T>(p, cells));
    });
    f.last = when_all(after(sent, received));
    return f.last;
  }
  // Device memory: staged through host buffers (no device memory in MPI here).
  if (f.out.size() != cells) {
    f.out.resize(cells);
    f.in.resize(cells);
  }
  auto host_view = [&](std::vector<T>& v) {
    return view<T, N, host_space>(ptr<T, host_space>(v.data(), 0), ext);
  };
  auto packed = tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
    using S = decltype(sp);
    return strata::copy(after(ready, prev), host_view(f.out), t.template local_view<S>(b, lo, ext));
  });
  auto sent = start_after_event(packed, [keep, &f, send_tag] {
    return send(keep->members, f.peer, send_tag, std::span<T const>(f.out));
  });
  auto received = start_after_event(prev, [keep, &f, recv_tag] {
    return recv(keep->members, f.peer, recv_tag, std::span<T>(f.in));
  });
  auto unpacked = tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
    using S = decltype(sp);
    return strata::copy(after(received, ready), t.template local_view<S>(b, in_lo, ext),
                        host_view(f.in));
  });
  f.last = when_all(after(sent, unpacked));
  return f.last;
}

}  // namespace detail

/// A tensor whose rows (dimension 0) are split over the ranks of a team.
template <class T, std::size_t N>
class tensor {
  static_assert(!cell_traits<T>::is_record,
                "dist::tensor: plain cells only (records across ranks are not supported yet)");

 public:
  using value_type = T;
  static constexpr std::size_t rank = N;

  /// Collective over `members`: the global `extent` split along dimension 0 (the first
  /// extent[0] % size ranks get one more row); this rank's rows are a strata::tensor over
  /// `places` made with `local_spec`'s partitions, sub-partitions and padding (its extent
  /// and weights are ignored). Every rank must pass the same extent, padding and
  /// partitions of dimensions 1.. (checked: invalid_argument names the difference).
  tensor(team const& members, vec<N> extent, std::vector<place> const& places,
         tensor_spec<N> local_spec)
      : s_(std::make_shared<detail::dist_tensor_state<T, N>>()) {
    if (!members.valid() || members.rank() < 0)
      throw invalid_argument(
          "dist::tensor: this rank is not a member of the team; expected every member (and "
          "only members) to construct it");
    int const size = members.size(), me = members.rank();
    auto& s = *s_;
    // Construction is collective: a rank whose arguments or local tensor fail must not
    // throw before the all-gather below, where the others would wait for it forever.
    // So each rank records its outcome, it travels with the shape, and every rank
    // throws the same error (docs/dist.md "Distributed tensors").
    struct agreement {
      // What every rank must pass alike: the extent, the padding and the partitions of
      // dimensions 1..
      std::array<index_t, 2 * N> shape{};
      detail::local_outcome outcome;
    };
    agreement mine;
    for (std::size_t d = 0; d < N; ++d) mine.shape[d] = extent[d];
    mine.shape[N] = local_spec.padding;
    for (std::size_t d = 1; d < N; ++d)
      mine.shape[N + d] =
          static_cast<index_t>(local_spec.partitions[d] * local_spec.sub_partitions[d]);
    s.row_cuts.resize(static_cast<std::size_t>(size) + 1);
    // The halo messages' tags name the column block (face_tag): at most 16384 of them.
    index_t columns = 1;
    for (std::size_t d = 1; d < N; ++d) columns *= std::max<index_t>(mine.shape[N + d], 1);
    if (columns > detail::max_column_blocks) {
      mine.outcome = detail::local_outcome::failure(
          detail::local_outcome::bad_argument,
          std::to_string(columns) +
              " blocks across the rows (partitions x sub-partitions of dimensions 1..); "
              "expected at most " +
              std::to_string(detail::max_column_blocks));
    } else if (extent[0] < size * std::max<index_t>(local_spec.padding, 1)) {
      mine.outcome = detail::local_outcome::failure(
          detail::local_outcome::bad_argument,
          std::to_string(extent[0]) + " rows over " + std::to_string(size) +
              " ranks with padding " + std::to_string(local_spec.padding) +
              "; expected at least max(padding, 1) rows per rank");
    } else {
      // The local tensor is made before the ranks compare notes: its checks (blocks of
      // an uneven split may be too small on some ranks only) are part of the outcome.
      for (int r = 0; r <= size; ++r)
        s.row_cuts[static_cast<std::size_t>(r)] =
            extent[0] / size * r + std::min<index_t>(r, extent[0] % size);
      vec<N> local_extent = extent;
      local_extent[0] =
          s.row_cuts[static_cast<std::size_t>(me) + 1] - s.row_cuts[static_cast<std::size_t>(me)];
      local_spec.extent = local_extent;
      local_spec.weights = {};
      mine.outcome =
          detail::outcome_of([&] { s.local = strata::tensor<T, N>(places, local_spec); });
      if (mine.outcome.failed()) {
        auto const reason = "its " + std::to_string(local_extent[0]) + " of " +
                            std::to_string(extent[0]) +
                            " rows could not be made a local tensor: " + mine.outcome.text;
        mine.outcome = detail::local_outcome::failure(
            static_cast<detail::local_outcome::kind_t>(mine.outcome.kind), reason);
      }
    }
    std::vector<agreement> all(static_cast<std::size_t>(size));
    all_gather(members, std::span<agreement const>(&mine, 1), std::span<agreement>(all)).wait();
    // Every rank reads the same records in the same order: the same error everywhere,
    // for the first rank in team order that failed or passed another shape than rank 0.
    for (int r = 0; r < size; ++r) {
      auto const& there = all[static_cast<std::size_t>(r)];
      if (there.outcome.failed()) detail::throw_agreed("dist::tensor", r, there.outcome);
      for (std::size_t i = 0; i < there.shape.size(); ++i)
        if (there.shape[i] != all[0].shape[i])
          throw invalid_argument(
              "dist::tensor: team rank " + std::to_string(r) +
              " passed a different global shape (extent, padding or partitions of dimensions "
              "1..; value " +
              std::to_string(i) + ": " + std::to_string(there.shape[i]) + " there, " +
              std::to_string(all[0].shape[i]) +
              " on team rank 0); expected the same on every rank");
    }
    s.members = runtime::current().make_team(members.ranks());
    s.extent = extent;
    auto& st = s.local.state();
    auto const& g = st.geo;
    s.column_blocks =
        static_cast<std::size_t>(g.block_count()) / static_cast<std::size_t>(g.blocks[0]);
    s.faces.resize(s.local.blocks());
    for (std::size_t b = 0; b < s.local.blocks(); ++b) {
      auto const c = g.coord(b);
      for (int side = 0; side < 2; ++side) {
        auto f = std::make_unique<detail::face_link<T>>();
        bool const outer = side == 0 ? c[0] == 0 : c[0] == g.blocks[0] - 1;
        int const peer = side == 0 ? me - 1 : me + 1;
        if (outer && s.local.padding() > 0 && size > 1) {
          if (peer >= 0 && peer < size)
            f->peer = peer;
          else if (st.periodic)
            f->peer = (peer + size) % size;
        }
        s.faces[b][static_cast<std::size_t>(side)] = std::move(f);
      }
    }
    // A memory file per outer face: up to 32 column blocks (64 files; descriptors are a
    // budget the program shares); more exchange messages. The same answer on every rank.
    if (size > 1 && s.local.padding() > 0 && s.column_blocks <= detail::max_direct_columns &&
        detail::direct_access(s.members))
      make_direct();
    install();
  }

  /// This rank's rows: a tensor like any other (kernels, graphs, access specifiers).
  strata::tensor<T, N> const& local() const { return s_->local; }
  team const& members() const { return s_->members; }
  vec<N> extent() const { return s_->extent; }
  /// The global index of this rank's first cell, and the rows of team rank r.
  vec<N> origin() const {
    vec<N> o{};
    o[0] = s_->row_cuts[static_cast<std::size_t>(s_->members.rank())];
    return o;
  }
  index_t first_row(int r) const { return s_->row_cuts.at(static_cast<std::size_t>(r)); }
  index_t rows(int r) const {
    return s_->row_cuts.at(static_cast<std::size_t>(r) + 1) - first_row(r);
  }

  detail::dist_tensor_state<T, N>& state() const { return *s_; }

 private:
  template <class U, std::size_t M, class B>
  friend void set_boundary(tensor<U, M>& t, B policy);

  /// On one node (every member agrees, direct_access): every face on the outer rows of
  /// blocks gets a control block, and the members tell each other theirs (collective).
  /// A face whose block is not in host memory, or whose control block could not be made,
  /// says so: both sides of it then exchange messages.
  void make_direct() {
    auto& s = *s_;
    auto const& g = s.local.state().geo;
    std::vector<detail::face_info> mine(2 * s.column_blocks);
    for (std::size_t b = 0; b < s.local.blocks(); ++b) {
      auto const c = g.coord(b);
      for (int side = 0; side < 2; ++side) {
        if (side == 0 ? c[0] != 0 : c[0] != g.blocks[0] - 1) continue;
        auto& f = *s.faces[b][static_cast<std::size_t>(side)];
        auto& info =
            mine[static_cast<std::size_t>(side) * s.column_blocks + detail::column_of(s.local, b)];
        if (s.local.space_of(b) != space_id::host) continue;
        try {
          f.ctl = detail::shared_block(s.members, detail::halo_block_bytes);
          new (f.ctl.data()) detail::halo_slot{};
          info = {f.ctl.handle(), 1};
        } catch (std::exception const&) {  // out of memory files or maps: messages
        }
      }
    }
    s.direct_faces.resize(static_cast<std::size_t>(s.members.size()) * mine.size());
    all_gather(s.members, std::span<detail::face_info const>(mine),
               std::span<detail::face_info>(s.direct_faces))
        .wait();
  }

  /// The local tensor's edge loader: the user's policy at every local edge, then the rows
  /// of faces shared with other ranks over it (the exchange overwrites what the policy
  /// put there; it runs after, so rows and corners end up as on one big tensor).
  void install() {
    // Weak: the local tensor's state is owned by this state (a strong reference would be
    // a cycle); a copy of local() that outlives the distributed tensor gets an error.
    std::weak_ptr<detail::dist_tensor_state<T, N>> weak = s_;
    s_->local.state().edges = [weak](after const& deps, std::size_t b, dim_mask dims) {
      auto s = weak.lock();
      if (!s)
        throw invalid_argument(
            "dist::tensor: the padding of a local tensor whose distributed tensor was "
            "destroyed; expected the dist::tensor to outlive the use of local()");
      if (!(dims & 1u)) return s->policy ? s->policy(deps, b, dims) : when_all(deps);
      // The ranks share faces in dimension 0 only. The rows a face sends include their
      // padding columns, which the policy writes: it waits until the face's previous
      // exchange has ended (the neighbour may still be reading those rows from here).
      strata::event earlier = when_all(deps);
      for (int side = 0; side < 2; ++side) {
        auto& f = *s->faces[b][static_cast<std::size_t>(side)];
        if (f.peer < 0) continue;
        std::lock_guard lock(f.mutex);
        if (!f.last.ready()) earlier = when_all(after(earlier, f.last));
      }
      strata::event ready = s->policy ? s->policy(after(earlier), b, dims) : earlier;
      std::vector<strata::event> done;  // one allocation per exchange, handed to the join
      done.reserve(3);
      done.push_back(ready);
      for (int side = 0; side < 2; ++side)
        if (s->faces[b][static_cast<std::size_t>(side)]->peer >= 0)
          done.push_back(detail::exchange_face(s, b, side, ready));
      return when_all(after(std::move(done)));
    };
  }

  std::shared_ptr<detail::dist_tensor_state<T, N>> s_;
};

/// The policy at the global domain's edges (any strata::boundary policy or user loader,
/// as set_boundary on a tensor). Periodic wraps around the ranks in dimension 0 and
/// around each rank's rows in the others.
template <class T, std::size_t N, class B>
void set_boundary(tensor<T, N>& t, B policy) {
  auto& s = *t.s_;
  strata::tensor<T, N> local = s.local;
  strata::set_boundary(local, policy);  // periodic flag and the policy's loader
  auto& st = s.local.state();
  s.policy = std::move(st.edges);
  int const size = s.members.size(), me = s.members.rank();
  auto const& g = st.geo;
  for (std::size_t b = 0; b < s.faces.size(); ++b) {
    auto const c = g.coord(b);
    for (int side = 0; side < 2; ++side) {
      bool const outer = side == 0 ? c[0] == 0 : c[0] == g.blocks[0] - 1;
      int const peer = side == 0 ? me - 1 : me + 1;
      auto& f = *s.faces[b][static_cast<std::size_t>(side)];
      if (!outer || st.geo.padding == 0 || size == 1) continue;
      if (peer >= 0 && peer < size)
        f.peer = peer;
      else
        f.peer = st.periodic ? (peer + size) % size : -1;
    }
  }
  t.install();
}

}  // namespace strata::dist
