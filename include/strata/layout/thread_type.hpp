// Thread-array types (PARRAY §4, §4.8, §4.10, §5.5): threads form arrays with dimension
// trees, as data do. `thread_array<thread_kind::pthd> P{dims{3, 4}}` is PARRAY's
// `parray pthd [[3][4]] P`; a thread's `tid` per sub-dimension follows the tree row-major
// (§4.8: in `[[3][4]]`, tid_0 = tid / 4 % 3). Launching one (`for P { ... }`) is the
// execution layer's job (exec/thread_array.hpp); this header holds the types, which data
// types refer to: a `distributed_type` has top-level dimensions of threads and of memory
// (§5.5, Listings 40-41), and says which thread holds an element and where.
//
// A thread tree is stored compactly (at most 16 nodes, a few hundred bytes) so that a
// kernel receives it by value on every backend; thread types are regular (sizes only).
#pragma once

#include <strata/layout/array_type.hpp>
#include <strata/layout/spec.hpp>

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

/// The kinds of thread arrays (PARRAY's thread types, §2.2). `pthd`: operating-system
/// threads of this process, all running at once (they may block and `sync`); `omp`: the
/// threads of an OpenMP parallel region; `cuda`: a GPU-style grid of blocks, launched on
/// any place (a CUDA GPU, a sim device, or the host backends); `mpi`: the processes of a
/// distributed team (run by dist::for_ranks, include/strata/dist/thread_array.hpp).
namespace thread_kind {
struct pthd {};
struct omp {};
struct cuda {};
struct mpi {};
}  // namespace thread_kind

/// Nodes one thread-array type may have.
inline constexpr int max_thread_nodes = 16;

/// A regular dimension tree of threads, flat: node 0 is the whole array; a node's index is
/// `(tid / stride) % size` (row-major over the leaves).
struct thread_tree {
  struct node {
    index_t size = 1;
    index_t stride = 1;
    std::int8_t first_child = -1;
    std::int8_t children = 0;
    std::int8_t parent = -1;
  };
  node nodes[max_thread_nodes];
  int count = 1;

  STRATA_FN constexpr index_t size() const { return nodes[0].size; }

  /// The node at a path of sub-dimension numbers (`{0, 1}` is PARRAY's `_0_1`); -1 when
  /// the path leaves the tree.
  STRATA_FN constexpr int find(int const* path, int depth) const {
    int n = 0;
    for (int k = 0; k < depth; ++k) {
      if (path[k] < 0 || path[k] >= nodes[n].children) return -1;
      n = nodes[n].first_child + path[k];
    }
    return n;
  }
  /// The index of thread `tid` in node `n` (PARRAY's tid_path).
  STRATA_FN constexpr index_t index(int n, index_t tid) const {
    return tid / nodes[n].stride % nodes[n].size;
  }
  /// The sync group of node n holding thread `tid`: the threads that differ from it only
  /// in node n's index (§4.10: `sync_1` in `[512][[4][32]]` is the block's 128 threads).
  STRATA_FN constexpr index_t group(int n, index_t tid) const {
    auto const& d = nodes[n];
    return tid / (d.stride * d.size) * d.stride + tid % d.stride;
  }
  STRATA_FN constexpr index_t groups(int n) const { return size() / nodes[n].size; }
};

namespace detail {

/// Builds a thread tree from PARRAY's bracket notation (sizes and `dims{}` only).
inline thread_tree make_thread_tree(std::vector<dim_spec> const& specs, char const* kind) {
  thread_tree t;
  auto bad = [&](std::string const& why) {
    layout_error(std::string("thread array (") + kind + "): " + why);
  };
  if (specs.empty()) bad("no dimensions; expected at least one size");
  // Children of a node take consecutive slots, so that a path is a walk of offsets.
  auto place_children = [&](auto& self, int at, std::vector<dim_spec> const& kids) -> void {
    if (t.count + static_cast<int>(kids.size()) > max_thread_nodes)
      bad("more than " + std::to_string(max_thread_nodes) + " dimension nodes");
    t.nodes[at].first_child = static_cast<std::int8_t>(t.count);
    t.nodes[at].children = static_cast<std::int8_t>(kids.size());
    int const first = t.count;
    t.count += static_cast<int>(kids.size());
    for (std::size_t k = 0; k < kids.size(); ++k) {
      auto const& s = kids[k];
      if (s.pure() || !s.chain().empty())
        bad("references, displacements and offset functions are not thread dimensions; "
            "expected sizes and dims{...} only");
      t.nodes[first + static_cast<int>(k)].size = s.size();
      t.nodes[first + static_cast<int>(k)].parent = static_cast<std::int8_t>(at);
      if (!s.children().empty()) self(self, first + static_cast<int>(k), s.children());
    }
  };
  if (specs.size() == 1 && specs[0].pure()) bad("a reference is not a thread array");
  if (specs.size() == 1 && specs[0].chain().empty() && !specs[0].pure()) {
    t.nodes[0].size = specs[0].size();
    if (!specs[0].children().empty()) place_children(place_children, 0, specs[0].children());
  } else {
    index_t total = 1;
    for (auto const& s : specs) {
      if (s.pure() || !s.chain().empty())
        bad("references, displacements and offset functions are not thread dimensions; "
            "expected sizes and dims{...} only");
      // Checked before multiplying: a wrapped product (2^32 x 2^32 is 0) passed the check
      // below as an array of no threads.
      if (total > (index_t{1} << 31) / s.size()) bad("more than 2^31 threads");
      total *= s.size();
    }
    t.nodes[0].size = total;
    place_children(place_children, 0, specs);
  }
  if (t.size() > (index_t{1} << 31)) bad("more than 2^31 threads");
  // Strides: row-major inside each node.
  for (int n = 0; n < t.count; ++n) {
    auto const& d = t.nodes[n];
    index_t s = d.stride;
    for (int k = d.children - 1; k >= 0; --k) {
      auto& c = t.nodes[d.first_child + k];
      c.stride = s;
      s *= c.size;
    }
  }
  return t;
}

}  // namespace detail

/// A sub-dimension of a thread-array type (PARRAY's `P_0`): what a distributed type's
/// thread dimension refers to. It points into its thread array, which must outlive it.
struct thread_dim {
  thread_tree const* tree = nullptr;
  int node = 0;
  index_t size() const { return tree->nodes[node].size; }
  /// The sub-dimension `k` (`P[0][1]` is PARRAY's `P_0_1`).
  thread_dim operator[](int k) const {
    auto const& n = tree->nodes[node];
    if (k < 0 || k >= n.children)
      detail::layout_error("thread array: sub-dimension " + std::to_string(k) +
                           " does not exist; expected 0.." + std::to_string(n.children - 1));
    return {tree, n.first_child + k};
  }
};

/// A thread-array type: a kind and a dimension tree of threads.
template <class Kind>
class thread_array {
 public:
  using kind = Kind;

  /// PARRAY's bracket notation: `thread_array<thread_kind::pthd> P{dims{3, 4}}` is
  /// `parray pthd [[3][4]] P`; `{512, dims{4, 32}}` is `[512][[4][32]]`.
  thread_array(std::initializer_list<dim_spec> specs)
      : tree_(detail::make_thread_tree(std::vector<dim_spec>(specs), kind_name())) {}
  explicit thread_array(std::vector<dim_spec> const& specs)
      : tree_(detail::make_thread_tree(specs, kind_name())) {}

  /// Threads in the array (PARRAY `size`).
  STRATA_FN constexpr index_t size() const { return tree_.size(); }
  /// Top-level sub-dimensions (PARRAY `ndim`).
  STRATA_FN constexpr int ndim() const { return tree_.nodes[0].children; }
  STRATA_FN constexpr thread_tree const& tree() const { return tree_; }
  /// The sub-dimension `P_k`, and deeper ones with another [] (`P[0][1]`).
  thread_dim operator[](int k) const { return thread_dim{&tree_, 0}[k]; }
  /// A `cuda` array whose blocks share `bytes` of scratchpad (PARRAY's `smem` tiles).
  thread_array scratchpad(
      std::size_t bytes) const requires std::is_same_v<Kind, thread_kind::cuda> {
    thread_array t = *this;
    t.scratchpad_ = bytes;
    return t;
  }
  std::size_t scratchpad_bytes() const { return scratchpad_; }

  static constexpr char const* kind_name() {
    if constexpr (std::is_same_v<Kind, thread_kind::pthd>)
      return "pthd";
    else if constexpr (std::is_same_v<Kind, thread_kind::omp>)
      return "omp";
    else if constexpr (std::is_same_v<Kind, thread_kind::mpi>)
      return "mpi";
    else
      return "cuda";
  }

 private:
  thread_tree tree_;
  std::size_t scratchpad_ = 0;
};

/// One top-level dimension of a distributed type: threads (a thread array or one of its
/// sub-dimensions) or memory (any dimension of PARRAY's notation).
class dist_part {
 public:
  template <class Kind>
  dist_part(thread_array<Kind> const& t)  // NOLINT: [#PTHD]
      : threads_(true), tree_(t.tree()), node_(0) {}
  dist_part(thread_dim d)  // NOLINT: [#PTHD_0]
      : threads_(true), tree_(*d.tree), node_(d.node) {}
  template <class S>
  requires std::constructible_from<dim_spec, S> dist_part(S&& s)  // NOLINT: [HMEM_1]
      : spec_(std::forward<S>(s)) {}

  bool threads() const { return threads_; }
  index_t size() const {
    if (threads_) return tree_.nodes[node_].size;
    return spec_.pure() ? spec_.chain().front().target.size() : spec_.size();
  }
  thread_tree const& tree() const { return tree_; }
  int node() const { return node_; }
  dim_spec const& spec() const { return spec_; }

 private:
  bool threads_ = false;
  thread_tree tree_{};
  int node_ = 0;
  dim_spec spec_{1};
};

/// A distributed array type (PARRAY §5.5): top-level dimensions of threads and of memory.
/// `distributed_type<int> DATA{P, HMEM[1]}` is `parray [#PTHD][HMEM_1] DATA`: element k
/// lives on the thread whose index in each thread dimension is k's index there
/// (`owns`, `thread_offset`: PARRAY's `DATA on <THREADMT>`), at offset `local_offset(k)` of
/// that thread's part, laid out by `local_type()` (`DATA on <LOCALMT>`).
template <class T, memory_space Space = host_space>
class distributed_type {
 public:
  distributed_type(std::initializer_list<dist_part> parts) : parts_(parts) {
    if (parts_.empty() || parts_.size() > 64)
      detail::layout_error("distributed type: " + std::to_string(parts_.size()) +
                           " top-level dimensions; expected 2 to 64");
    std::vector<dim_spec> local;
    bool threads = false;
    for (auto const& p : parts_) {
      if (p.threads())
        threads = true;
      else
        local.push_back(p.spec());
    }
    if (!threads)
      detail::layout_error(
          "distributed type: no thread dimension; expected at least one thread array or "
          "thread sub-dimension among the top-level dimensions (else use array_type)");
    if (local.empty())
      detail::layout_error(
          "distributed type: no memory dimension; expected at least one (PARRAY §5.5)");
    local_ = std::make_unique<array_type<T, Space>>(local);
  }
  distributed_type(distributed_type const& o) : parts_(o.parts_) {
    local_ = std::make_unique<array_type<T, Space>>(*o.local_);
  }

  /// Elements in the whole type.
  index_t size() const {
    index_t n = 1;
    for (auto const& p : parts_) n *= p.size();
    return n;
  }
  int ndim() const { return static_cast<int>(parts_.size()); }
  /// What one thread holds: the memory dimensions, in order.
  array_type<T, Space> const& local_type() const { return *local_; }

  /// Whether the thread `tid` (of the thread array the thread dimensions refer to) holds
  /// element k.
  bool owns(index_t tid, index_t k) const {
    check_thread(tid);
    bool mine = true;
    walk(k, [&](dist_part const& p, index_t i) {
      if (p.threads()) mine = mine && p.tree().index(p.node(), tid) == i;
    });
    return mine;
  }
  /// The index of element k in the thread dimensions, row-major over them (PARRAY's
  /// `DATA on <THREADMT>`); for one thread dimension, the owner's index in it.
  index_t thread_offset(index_t k) const {
    index_t t = 0;
    walk(k, [&](dist_part const& p, index_t i) {
      if (p.threads()) t = t * p.size() + i;
    });
    return t;
  }
  /// Where element k is in its thread's part (`DATA on <LOCALMT>`).
  index_t local_offset(index_t k) const {
    index_t l = 0;
    walk(k, [&](dist_part const& p, index_t i) {
      if (!p.threads()) l = l * p.size() + i;
    });
    return (*local_)(l);
  }

  /// The part of `global` (a type with this type's top-level dimensions) that thread `tid`
  /// holds, as a window type: `copy(DATA.local_type().on(mine), DATA.window(HMEM, tid)
  /// .on(data))` is Listing 41's `copy HMEM(data) to DATA(ldata)` in thread tid, and the
  /// reverse copy gathers the part back.
  template <class U, memory_space S>
  array_type<U, S> window(array_type<U, S> const& global, index_t tid) const {
    if (global.ndim() != ndim())
      detail::layout_error("distributed type: window of a type with " +
                           std::to_string(global.ndim()) + " top-level dimensions; expected " +
                           std::to_string(ndim()) + " (one per dimension of the distributed type)");
    if (global.root().tree().nodes[global.root().node()].chain_len != 0)
      detail::layout_error(
          "distributed type: window of a type whose root has a chain (# ...); expected "
          "a type whose offset is the sum of its top-level dimensions' (PARRAY §2.4)");
    check_thread(tid);
    std::vector<dim_spec> box;
    for (int d = 0; d < ndim(); ++d) {
      auto const& p = parts_[static_cast<std::size_t>(d)];
      if (global[d].size() != p.size())
        detail::layout_error("distributed type: top-level dimension " + std::to_string(d) +
                             " has " + std::to_string(global[d].size()) +
                             " elements in the window's type; expected " +
                             std::to_string(p.size()));
      if (p.threads())
        box.push_back(dim_spec(1) | disp(p.tree().index(p.node(), tid)) | global[d]);
      else
        box.push_back(global[d]);
    }
    return array_type<U, S>(box);
  }

 private:
  // A thread id of the arrays the thread dimensions refer to (else a wrapped id would
  // silently name another thread's part).
  void check_thread(index_t tid) const {
    for (auto const& p : parts_)
      if (p.threads() && (tid < 0 || tid >= p.tree().size()))
        detail::layout_error("distributed type: thread " + std::to_string(tid) +
                             " is out of range; expected 0.." +
                             std::to_string(p.tree().size() - 1) + " (its thread array's ids)");
  }

  // Calls f(part, index) for each top-level dimension of element k (row-major).
  template <class F>
  void walk(index_t k, F&& f) const {
    if (k < 0 || k >= size())
      detail::layout_error("distributed type: element " + std::to_string(k) +
                           " is out of range; expected 0.." + std::to_string(size() - 1));
    index_t idx[64];
    auto n = parts_.size();
    for (std::size_t d = n; d-- > 0;) {
      idx[d] = k % parts_[d].size();
      k /= parts_[d].size();
    }
    for (std::size_t d = 0; d < n; ++d) f(parts_[d], idx[d]);
  }

  std::vector<dist_part> parts_;
  std::unique_ptr<array_type<T, Space>> local_;
};

}  // namespace strata
