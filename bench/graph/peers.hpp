// The peers of the graph benchmarks (issue 6): the same four task-graph shapes written as
// a user of oneTBB's flow_graph or of OpenMP tasks would write them. Every task, on both
// sides, runs task_body(index), so the comparison measures the scheduler, not the work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace strata::bench::graph_peers {

enum class shape { chain, tree, wavefront, fanout };

/// Nodes of a workload: chain/fanout take `size` tasks (fanout adds a source and a sink),
/// tree is a binary tree of depth `size` (2^size - 1 nodes), wavefront `size` x `size`
/// blocks, each after its left and upper neighbour.
std::size_t task_count(shape s, std::size_t size) noexcept;

/// A prebuilt peer workload; run() executes it once, start to finish, at `threads` threads.
class peer {
 public:
  virtual ~peer() = default;
  virtual void run() = 0;
  virtual char const* name() const = 0;  // "tbb-flow_graph/2", "omp-task/2"
};

/// size: as task_count says. make_tbb returns null when built without oneTBB.
std::unique_ptr<peer> make_tbb(shape s, std::size_t size, int threads);
/// make_omp writes each shape as an OpenMP programmer would: `task depend` for chain and
/// wavefront, recursive tasks (tree) and tasks + taskwait (fanout) for the fork-join shapes.
/// make_omp_depend writes tree and fanout with `task depend` edges too (the peer:
/// one task per node, created by one thread, each after its predecessors); it returns null
/// for chain and wavefront, which make_omp already writes that way, and for fanouts wider
/// than 4096 unless STRATA_BENCH_OMP_DEPEND_FANOUT is set (libgomp is quadratic there).
std::unique_ptr<peer> make_omp(shape s, std::size_t size, int threads);
std::unique_ptr<peer> make_omp_depend(shape s, std::size_t size, int threads);

/// The TBB peer built, run once and destroyed in every run() (the build+run variants):
/// "tbb-flow_graph-build/N". Null without oneTBB.
std::unique_ptr<peer> make_tbb_build_run(shape s, std::size_t size, int threads);

/// Latency of starting one task on an idle oneTBB arena of `threads` threads: enqueue a
/// task that stamps the time it starts, from a thread outside the arena; returns the
/// seconds between the call and the stamp, for `samples` starts each after the arena's
/// workers went idle for `idle_ms`. Empty without oneTBB.
std::vector<double> tbb_wake_latencies(int threads, int samples, int idle_ms);

/// The work every task does (identical for both sides): a few dozen ns of dependent
/// integer arithmetic on the task's index, summed per thread so it can't be optimised away
/// and costs no shared cache line.
void task_body(std::size_t index) noexcept;
/// Sum of what task_body produced since the last reset (call while no task runs).
std::uint64_t checksum() noexcept;
void reset_checksum() noexcept;
/// What checksum() must be after one run of a workload with task indices [0, n).
std::uint64_t expected_checksum(std::size_t n) noexcept;

}  // namespace strata::bench::graph_peers
