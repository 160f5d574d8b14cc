// The CUDA backend's host side (Phalanx §IV-A, Fig. 2): a pool of streams per device,
// cudaEvents as the device-side markers of strata events, and one completion worker per
// device that turns each marker into the completion of its strata event. Compiled by the
// host compiler against cudart, in CUDA builds only.
//
// Why a worker and not cudaLaunchHostFunc: a host function may not call CUDA, yet an
// event's continuations do (a launch after it); and after a kernel fault the stream stops,
// so a host function would never run and `wait` would hang. The worker's
// cudaEventSynchronize returns the fault instead, which fails the event. Markers are
// blocking-sync events from a per-device pool (issue 13, item 7): the worker polls a marker
// for at most STRATA_CUDA_SPIN_US (1 ms by default, spin_window.hpp) and then sleeps in the
// driver rather than spinning a core, and a launch makes no cudaEvent of its own.
//
// Tracing (issue 12): with STRATA_TRACE on, stream_for records a timing event before the
// work and finish makes its marker a timing event too; the completion worker turns the
// pair into an event on the lane "stream k" of "CUDA device N", placed in host time
// through a reference event recorded when the device was set up, and ending the flow
// arrow from the node that launched it.
#include <strata/error.hpp>
#include <strata/exec/cuda/backend.hpp>
#include <strata/exec/trace.hpp>

#include "exec/cuda/event_pool.hpp"
#include "exec/cuda/pointers.hpp"
#include "exec/cuda/staging.hpp"
#include "exec/exec_state.hpp"
#include "exec/wait_hook.hpp"
#include "log.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace strata::detail::cuda {

[[noreturn]] void fail(char const* call, int code, std::string const& context) {
  auto e = static_cast<cudaError_t>(code);
  throw backend_error(fmt::format("{}{}{}: {} ({})", context, context.empty() ? "" : ": ", call,
                                  cudaGetErrorString(e), cudaGetErrorName(e)));
}

static_assert(static_cast<int>(memory_type::unregistered) == cudaMemoryTypeUnregistered &&
              static_cast<int>(memory_type::host) == cudaMemoryTypeHost &&
              static_cast<int>(memory_type::device) == cudaMemoryTypeDevice &&
              static_cast<int>(memory_type::managed) == cudaMemoryTypeManaged);

std::optional<foreign_memory> foreign_memory_of(void const* address) noexcept {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, address) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver, or not CUDA's: not the caller's next error
    return std::nullopt;
  }
  return classify(static_cast<memory_type>(attr.type), attr.device);
}

device_guard::device_guard() noexcept {
  if (cudaGetDevice(&saved_) != cudaSuccess) {
    saved_ = -1;
    (void)cudaGetLastError();
  }
}

device_guard::~device_guard() {
  // Only a change is undone: setting the device the thread already has would still make
  // a context on it where the caller never used CUDA.
  int now = -1;
  if (saved_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != saved_) cudaSetDevice(saved_);
  (void)cudaGetLastError();  // a failed restore is not the caller's next call's error
}

namespace {

void check(cudaError_t e, char const* call, std::string const& context = {}) {
  if (e != cudaSuccess) fail(call, e, context);
}

constexpr int streams_per_device = 4;

// Trace: the timing event stream_for recorded before the work finish() is about to mark.
thread_local cudaEvent_t pending_begin = nullptr;

class device {
 public:
  device(int ordinal, std::chrono::microseconds spin) : ordinal_(ordinal), spin_(spin) {
    device_guard const keep_device;
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    enable_peers();
    for (auto& s : streams_)
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
    limits_ = {prop.maxThreadsPerBlock,
               {prop.maxThreadsDim[0], prop.maxThreadsDim[1], prop.maxThreadsDim[2]},
               {prop.maxGridSize[0], prop.maxGridSize[1], prop.maxGridSize[2]},
               prop.sharedMemPerBlock,
               prop.sharedMemPerBlockOptin};
    // Device time 0 for the trace: a reference event, completed now, read as host time.
    check(cudaEventCreate(&reference_), "cudaEventCreate");
    check(cudaEventRecord(reference_, streams_[0]), "cudaEventRecord");
    check(cudaEventSynchronize(reference_), "cudaEventSynchronize");
    reference_host_ = std::chrono::steady_clock::now();
    worker_ = std::thread([this] {
      mark_background_thread();
      run();
    });
  }
  ~device() {
    stager_.reset();  // its last copies complete through this device's worker, still running
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
    for (auto s : streams_) cudaStreamDestroy(s);
    cudaEventDestroy(reference_);
  }

  device_limits const& limits() const noexcept { return limits_; }
  cudaStream_t next_stream() noexcept {
    return streams_[next_.fetch_add(1, std::memory_order_relaxed) % streams_per_device];
  }
  int stream_index(cudaStream_t s) const noexcept {
    for (int i = 0; i < streams_per_device; ++i)
      if (streams_[static_cast<std::size_t>(i)] == s) return i;
    return -1;
  }

  event finish(cudaStream_t stream, std::string what) {
    // Traced: the marker is a timing event, paired with the begin event stream_for left.
    cudaEvent_t begin = std::exchange(pending_begin, nullptr);
    bool const traced = begin && trace::enabled();
    if (begin && !traced) cudaEventDestroy(begin), begin = nullptr;
    std::shared_ptr<void> owned;
    if (traced) {
      // A timing event, made for this work only (the trace is not the fast path).
      cudaEvent_t timed = nullptr;
      check(cudaEventCreateWithFlags(&timed, cudaEventBlockingSync), "cudaEventCreateWithFlags",
            what);
      owned.reset(timed, [](void* m) { cudaEventDestroy(static_cast<cudaEvent_t>(m)); });
    } else {
      owned = markers_->acquire();  // back to the pool when the last strata event lets go
    }
    auto marker = static_cast<cudaEvent_t>(owned.get());
    check(cudaEventRecord(marker, stream), "cudaEventRecord", what);
    auto done = event::pending();
    done.state()->set_native(owned, ordinal_);
    std::uint64_t const flow = traced ? trace::detail::flow_from_here() : 0;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({marker, owned, done, std::move(what), begin, stream_index(stream), flow});
    }
    wake_.notify_all();
    return done;
  }

  /// The staging thread of pageable host copies, made on first use.
  stager& staging() {
    std::lock_guard lock(stager_mutex_);
    if (!stager_) stager_ = std::make_unique<stager>(ordinal_);
    return *stager_;
  }

  bool wait_idle() {
    // A staged copy ends by queueing its marker below, so the stager is drained first
    // (without holding stager_mutex_: a continuation may be staging a copy meanwhile).
    stager* staging = nullptr;
    {
      std::lock_guard lock(stager_mutex_);
      staging = stager_.get();  // once made, it lives as long as the device
    }
    bool const staged = staging && staging->wait_idle();
    std::unique_lock lock(mutex_);
    bool const busy = staged || !queue_.empty() || running_;
    idle_.wait(lock, [this] { return queue_.empty() && !running_; });
    return busy;
  }

 private:
  // Kernels here may be handed other GPUs' memory (a multi-GPU grid over one array;
  // check_kernel_pointer accepts any CUDA memory): unified addressing gives every GPU the
  // same address, but a kernel may dereference a peer's memory only once this device has
  // peer access to it. Enabled for every peer the hardware allows; without P2P (GPUs on
  // different PCIe root complexes) such an access faults, and copies go through the host.
  void enable_peers() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    for (int peer = 0; peer < count; ++peer) {
      int can = 0;
      if (peer == ordinal_ || cudaDeviceCanAccessPeer(&can, ordinal_, peer) != cudaSuccess || !can)
        continue;
      auto e = cudaDeviceEnablePeerAccess(peer, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
        log(log_level::info, fmt::format("CUDA device {}: no peer access to device {}: {}",
                                         ordinal_, peer, cudaGetErrorString(e)));
    }
    (void)cudaGetLastError();  // AlreadyEnabled and refusals are not this thread's errors
  }

  struct entry {
    cudaEvent_t marker;
    std::shared_ptr<void> keep;  // the marker stays alive while the trace reads it
    event done;
    std::string what;
    cudaEvent_t begin;  // trace only, else null
    int stream;
    std::uint64_t flow;
  };

  // The device time of `e` as host time (through the reference event); false if CUDA
  // cannot tell (an event without timing, a fault).
  bool host_time(cudaEvent_t e, std::chrono::steady_clock::time_point& at) const {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, reference_, e) != cudaSuccess) return false;
    at = reference_host_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double, std::milli>(ms));
    return true;
  }

  void record_trace(entry const& e) {
    std::chrono::steady_clock::time_point b, f;
    if (host_time(e.begin, b) && host_time(e.marker, f) && trace::enabled())
      trace::detail::record_on(fmt::format("CUDA device {}", ordinal_),
                               fmt::format("stream {}", e.stream), e.what, "cuda", b, f, {},
                               e.flow);
    (void)cudaGetLastError();  // a refused timing query is not the next call's error
  }

  void run() {
    cudaSetDevice(ordinal_);
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      entry e = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      // Returns once the device has passed the marker, or with a fault of the work.
      auto err = wait_marker(e.marker);
      if (e.begin) {
        if (err == cudaSuccess) record_trace(e);
        cudaEventDestroy(e.begin);
      }
      std::exception_ptr failure;
      if (err != cudaSuccess) {
        try {
          // Named as before the poll, whether the query or the synchronize saw the fault:
          // programs and tests (kernel_fault_test.cu) match this text.
          fail("cudaEventSynchronize", err,
               fmt::format("{} on CUDA device {} failed", e.what, ordinal_));
        } catch (...) {
          failure = std::current_exception();
        }
      }
      e.done.complete(failure);  // continuations run here, outside any CUDA callback
      lock.lock();
      running_ = false;
      idle_.notify_all();
    }
  }

  // Polls the marker for up to spin_ (spin_window.hpp) before sleeping in the driver: a
  // blocking-sync event wakes its waiter by an interrupt and a thread switch, tens of us
  // late. Each round yields, so a thread that wants the core gets it. A fault of the work
  // is reported by the query as by the synchronize.
  cudaError_t wait_marker(cudaEvent_t marker) const {
    if (spin_.count() > 0) {
      auto const until = std::chrono::steady_clock::now() + spin_;
      for (unsigned round = 1;; ++round) {
        auto const q = cudaEventQuery(marker);
        if (q != cudaErrorNotReady) {
          (void)cudaGetLastError();  // a NotReady of an earlier round is nobody's error
          return q;
        }
        if (round % 8 == 0 && std::chrono::steady_clock::now() >= until) break;
        std::this_thread::yield();
      }
      (void)cudaGetLastError();
    }
    return cudaEventSynchronize(marker);
  }

  // Markers without timing; blocking-sync, so that the completion worker's
  // cudaEventSynchronize sleeps in the driver instead of spinning a host core.
  static cudaEvent_t make_marker() {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync),
          "cudaEventCreateWithFlags");
    return e;
  }
  static void destroy_marker(cudaEvent_t e) noexcept { cudaEventDestroy(e); }
  using marker_pool = handle_pool<cudaEvent_t, cudaEvent_t (*)(), void (*)(cudaEvent_t) noexcept>;

  int ordinal_;
  std::chrono::microseconds spin_;  // the runtime's STRATA_CUDA_SPIN_US (wait_marker)
  std::shared_ptr<marker_pool> markers_ =
      std::make_shared<marker_pool>(&device::make_marker, &device::destroy_marker);
  std::array<cudaStream_t, streams_per_device> streams_{};
  std::atomic<unsigned> next_{0};
  device_limits limits_{};
  cudaEvent_t reference_ = nullptr;
  std::chrono::steady_clock::time_point reference_host_{};
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<entry> queue_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread worker_;
  std::mutex stager_mutex_;
  std::unique_ptr<stager> stager_;
};

class state final : public device_backend_state {
 public:
  device& get(int ordinal, std::chrono::microseconds spin) {
    std::lock_guard lock(mutex_);
    auto& d = devices_[ordinal];
    if (!d) {
      // A device whose setup throws leaves no slot behind (wait_idle walks every slot).
      try {
        d = std::make_unique<device>(ordinal, spin);
      } catch (...) {
        devices_.erase(ordinal);
        throw;
      }
    }
    return *d;
  }
  bool wait_idle() override {
    std::vector<device*> all;
    {
      std::lock_guard lock(mutex_);
      for (auto& [_, d] : devices_) all.push_back(d.get());
    }
    bool busy = false;
    for (auto* d : all) busy = d->wait_idle() || busy;
    return busy;
  }

 private:
  std::mutex mutex_;
  std::map<int, std::unique_ptr<device>> devices_;
};

device& device_of(int ordinal) {
  auto& exec = current_exec();
  state* s = nullptr;
  {
    std::lock_guard lock(exec.cuda_mutex);
    if (!exec.cuda) exec.cuda = std::make_unique<state>();
    s = static_cast<state*>(exec.cuda.get());
  }
  return s->get(ordinal, exec.cuda_spin);
}

}  // namespace

device_limits const& limits(int ordinal) {
  return device_of(ordinal).limits();
}

bool chainable(after const& deps) noexcept {
  for (auto const& e : deps.events)
    if (!e.ready() && !(e.state() && e.state()->native())) return false;
  return true;
}

// Leaves `ordinal` current for the work the caller queues next; the caller holds a
// device_guard that restores its own device afterwards.
void* stream_for(int ordinal, after const* deps) {
  auto& d = device_of(ordinal);
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  cudaStream_t s = d.next_stream();
  if (deps)
    for (auto const& e : deps->events)
      if (!e.ready() && e.state() && e.state()->native())
        check(cudaStreamWaitEvent(s, static_cast<cudaEvent_t>(e.state()->native()), 0),
              "cudaStreamWaitEvent");
  if (trace::enabled()) {
    // The begin of the work about to be queued on `s`, after its dependencies; finish() on this
    // thread pairs it with the work's marker.
    if (pending_begin) cudaEventDestroy(std::exchange(pending_begin, nullptr));
    check(cudaEventCreate(&pending_begin), "cudaEventCreate");
    check(cudaEventRecord(pending_begin, s), "cudaEventRecord");
  }
  return s;
}

event staged_copy(int ordinal, copy_desc const& d, after const* deps) {
  return device_of(ordinal).staging().copy(d, deps);
}

event finish(int ordinal, void* stream, std::string what) {
  return device_of(ordinal).finish(static_cast<cudaStream_t>(stream), std::move(what));
}

std::vector<int> devices_of(std::uint64_t mask) {
  std::vector<int> r;
  for (int i = 0; i < 64; ++i)
    if (mask >> i & 1u) r.push_back(i);
  return r;
}

}  // namespace strata::detail::cuda
