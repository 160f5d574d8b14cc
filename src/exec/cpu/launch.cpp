// The CPU backends' launch paths, compiled once against kernel_body (kernel_body.hpp says
// why), and the dispatch of a resolved launch to them.
#include <strata/error.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/first_error.hpp>
#include <strata/exec/launch.hpp>
#include <strata/exec/openmp/backend.hpp>
#include <strata/exec/serial/backend.hpp>
#include <strata/exec/sim/backend.hpp>
#include <strata/exec/threads/backend.hpp>
#include <strata/exec/threads/pool.hpp>
#include <strata/exec/trace.hpp>

#include "exec/exec_state.hpp"
#include "exec/sim/device.hpp"

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>

namespace strata {

namespace detail {

namespace {
char const* traced_name(std::type_info const& kernel) {
  return trace::enabled() ? trace::detail::type_name(kernel) : "kernel";
}

/// A threads-backend launch: chunks of blocks that the pool's workers claim.
class kernel_job : public job {
 public:
  kernel_job(chunking plan, slot_set const* slots, std::type_info const& kernel)
      : job(plan.chunks, slots, traced_name(kernel)), plan_(plan) {}
  void run_chunk(index_t chunk) override { body_->run(plan_.first(chunk), plan_.last(chunk)); }

 protected:
  chunking plan_;
  kernel_body const* body_ = nullptr;  // set by the derived class's constructor
};

/// ... whose body is shared with the caller (a launch after events).
class shared_body_job final : public kernel_job {
 public:
  shared_body_job(chunking plan, slot_set const* slots, std::shared_ptr<kernel_body const> body)
      : kernel_job(plan, slots, body->kernel_type()), body_owner_(std::move(body)) {
    body_ = body_owner_.get();
  }

 private:
  std::shared_ptr<kernel_body const> body_owner_;
};

/// ... whose body `build` makes inside the job: one allocation for both.
class built_body_job final : public kernel_job {
 public:
  built_body_job(chunking plan, slot_set const* slots, std::type_info const& kernel,
                 threads::body_builder build, void* parts)
      : kernel_job(plan, slots, kernel) {
    body_ = build(storage_, parts);  // if it throws, nothing was built
  }
  ~built_body_job() override { body_->~kernel_body(); }
  built_body_job(built_body_job const&) = delete;
  built_body_job& operator=(built_body_job const&) = delete;

 private:
  alignas(std::max_align_t) std::byte storage_[threads::job_body_bytes];
};

/// The inline form of a body the caller shares (serial and OpenMP launches after events):
/// its run() copies the arguments, which OpenMP threads need and serial can afford.
void run_shared_body(void const* body, index_t b0, index_t b1, bool) {
  static_cast<kernel_body const*>(body)->run(b0, b1);
}
}  // namespace

kernel_body::~kernel_body() = default;

[[noreturn]] void cpu_block_too_large(index_t threads, backend_id backend) {
  throw invalid_argument("launch: block of " + std::to_string(threads) + " threads exceeds the " +
                         std::string(to_string(backend)) + " backend's limit of " +
                         std::to_string(cpu_max_parallel_block) + " threads per parallel block");
}

event launch_inline(placement const& p, inline_kernel const& k) {
  switch (p.backend) {
    case backend_id::serial:
      return serial::backend::launch(p, k);
    case backend_id::openmp:
      return openmp::backend::launch(p, k);
    default:
      throw error("launch: the " + std::string(to_string(p.backend)) +
                  " backend does not run kernels in the launching thread");
  }
}

event launch_shared(placement const& p, std::shared_ptr<kernel_body const> body) {
  switch (p.backend) {
    case backend_id::serial:
    case backend_id::openmp:
      return launch_inline(
          p, inline_kernel{body->blocks(), &body->kernel_type(), &run_shared_body, body.get()});
    case backend_id::threads:
      return threads::backend::launch(p, std::move(body));
    case backend_id::sim:
      return sim::backend::launch(p, std::move(body));
    case backend_id::cuda:
      return body->cuda(p, nullptr);
  }
  throw invalid_argument("launch: backend id " + std::to_string(static_cast<int>(p.backend)) +
                         " is not a backend");
}

event launch_after(after const& deps, placement const& p, std::shared_ptr<kernel_body const> body) {
  // GPU after GPU: the stream waits for the events' markers on the device (Phalanx
  // §IV-A); the host does not wait.
  if (p.backend == backend_id::cuda && body->cuda_compiled() && cuda::chainable(deps)) {
    if (auto err = deps.error()) return event::failed(err);
    return body->cuda(p, &deps);
  }
  // The launch is made by whoever completes the last event (through the pool for
  // backends that run kernels inline).
  auto result = start_after(deps, runs_inline(p.backend),
                            [p, body = std::move(body)] { return launch_shared(p, body); });
  track_device_work(p, result);
  return result;
}

}  // namespace detail

namespace serial {
event backend::launch(detail::placement const&, detail::inline_kernel const& k) {
  trace::span traced(trace::enabled() ? detail::traced_name(*k.kernel) : "", "kernel", "serial");
  try {
    k.run(k.launch, 0, k.blocks, false);
  } catch (...) {
    return event::failed(std::current_exception());
  }
  return event::completed();
}
}  // namespace serial

namespace openmp {
event backend::launch(detail::placement const& where, detail::inline_kernel const& k) {
  trace::span traced(trace::enabled() ? detail::traced_name(*k.kernel) : "", "kernel", "openmp");
  struct region {
    detail::inline_kernel const& k;
    detail::first_error error;
  } r{k, {}};
  // Exceptions must not leave a parallel region: the first is kept and the event carries
  // it.
  detail::openmp_body run = [](void* ctx, int tid, int nth) noexcept {
    auto& rg = *static_cast<region*>(ctx);
    index_t const blocks = rg.k.blocks;
    // schedule(static) by hand: one contiguous range of blocks per thread, as the raw
    // `omp parallel for` a user would write. blocks * t / nth without the overflow.
    auto split = [&](index_t t) {
      return blocks / nth * t + blocks % nth * t / static_cast<index_t>(nth);
    };
    index_t const b0 = split(tid);
    index_t const b1 = split(tid + 1);
    if (b0 < b1) rg.error.run([&] { rg.k.run(rg.k.launch, b0, b1, true); });
  };
  detail::openmp_parallel(where.threads, run, &r);
  auto const error = r.error.get();
  return error ? event::failed(error) : event::completed();
}
}  // namespace openmp

namespace threads {
namespace {
event submit_job(std::shared_ptr<detail::job> j) {
  event done = j->done();
  detail::submit(std::move(j));
  return done;
}
}  // namespace

event backend::launch(detail::placement const& where,
                      std::shared_ptr<detail::kernel_body const> body) {
  detail::chunking plan(body->blocks(), where.threads, chunks_per_thread);
  return submit_job(std::make_shared<detail::shared_body_job>(plan, where.slots, std::move(body)));
}

event backend::launch(detail::placement const& where, index_t blocks, std::type_info const& kernel,
                      body_builder build, void* parts) {
  detail::chunking plan(blocks, where.threads, chunks_per_thread);
  return submit_job(
      std::make_shared<detail::built_body_job>(plan, where.slots, kernel, build, parts));
}
}  // namespace threads

namespace sim {
event backend::launch(detail::placement const& where,
                      std::shared_ptr<detail::kernel_body const> body) {
  detail::chunking plan(body->blocks(), where.threads, detail::sim_chunks_per_unit(where.device));
  // The kernel's type names its span on the sim unit's lane, as on the CPU backends.
  char const* name = detail::traced_name(body->kernel_type());
  return detail::current_exec()
      .sims.device(where.device)
      .enqueue_kernel(
          plan.chunks,
          [plan, body = std::move(body)](index_t c) { body->run(plan.first(c), plan.last(c)); },
          name);
}
}  // namespace sim

}  // namespace strata
