// Copies and the sim emulator:
// - memcpy: a 256 MiB host-to-host strata::copy (parallel on the pool) vs std::memcpy.
// - sim-copy: measured sim transfers vs the time the device's link model predicts (the
//   "peer" is the model, so the ratio says how faithful the emulator is), from 64 KiB to
//   64 MiB, each direction alone and an upload with a download at once.
// - sim-kernel: an empty sim kernel's launch + wait at speed 0.25 vs at speed 1.
// - overlap: a kernel and a copy of similar duration on two queues of one sim device vs
//   the same two back to back on one queue.
#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "memory/peer.hpp"

namespace strata::bench {
namespace {

void run_memcpy(context& ctx) {
  std::size_t const bytes = ctx.opts().quick ? std::size_t{16} << 20 : std::size_t{256} << 20;
  auto m = ctx.rt().machine();
  buffer<char> src(m, bytes), dst(m, bytes);
  fill(src, char(1)).wait();
  fill(dst, char(0)).wait();
  auto [ts, tp] = compare(
      ctx.opts().repeats, [&] { copy(dst, src).wait(); },
      [&] { plain::copy_bytes(dst.data().get(), src.data().get(), bytes); });
  if (dst(bytes - 1) != 1 || dst(0) != 1) throw std::runtime_error("memcpy benchmark: wrong copy");
  result r{"memcpy", "host->host", double(bytes), ts, "std::memcpy/1", tp};
  r.extra = {{"strata_gbps", double(bytes) / ts / 1e9}, {"peer_gbps", double(bytes) / tp / 1e9}};
  ctx.report(r);
}

std::vector<place> sim_devices(context& ctx) {
  auto devs = ctx.rt().machine().slice(isa::sim).descendants(place_type::device);
  if (devs.size() < 2)
    throw invalid_argument("sim benchmarks need two sim devices (STRATA_SIM_DEVICES=2:...)");
  return devs;
}

std::string size_name(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 20) ? std::to_string(bytes >> 20) + "MiB"
                                         : std::to_string(bytes >> 10) + "KiB";
}

void run_sim_copy(context& ctx) {
  auto devs = sim_devices(ctx);
  auto const& link = devs[0].info().link;
  auto const& other = devs[1].info().link;
  auto const sizes = ctx.opts().quick
                         ? std::vector<std::size_t>{std::size_t{64} << 10, std::size_t{1} << 20}
                         : std::vector<std::size_t>{std::size_t{64} << 10, std::size_t{256} << 10,
                                                    std::size_t{1} << 20, std::size_t{16} << 20,
                                                    std::size_t{64} << 20};
  for (std::size_t const bytes : sizes) {
    buffer<char> host(ctx.rt().machine(), bytes), back(ctx.rt().machine(), bytes);
    buffer<char, 1, sim_space> d0(devs[0], bytes), d0b(devs[0], bytes), d1(devs[1], bytes);
    // Touch every page first, so that no timed run pays for first-touch page faults.
    fill(host, char(3)).wait();
    fill(back, char(0)).wait();
    fill(d0, char(0)).wait();
    fill(d0b, char(5)).wait();
    fill(d1, char(0)).wait();
    double const predicted = link.latency + double(bytes) / link.bandwidth;
    // Between devices the model charges the larger latency and the smaller bandwidth.
    double const predicted_d2d = std::max(link.latency, other.latency) +
                                 double(bytes) / std::min(link.bandwidth, other.bandwidth);
    struct direction {
      char const* name;
      std::function<void()> run;
      double predicted;
    };
    std::vector<direction> const directions{
        {"host->sim", [&] { copy(d0, host).wait(); }, predicted},
        {"sim->host", [&] { copy(back, d0b).wait(); }, predicted},
        {"sim->sim", [&] { copy(d1, d0).wait(); }, predicted_d2d},
        // An upload and a download at once: each direction has a link of its own, so the
        // pair takes as long as one of them.
        {"both",
         [&] {
           wait_all({copy(d0, host), copy(back, d0b)});
         },
         predicted}};
    // Small transfers vary more with the host's scheduling: more runs for their minimum.
    int const repeats =
        bytes < (std::size_t{1} << 20) ? 5 * ctx.opts().repeats : ctx.opts().repeats;
    for (auto const& dir : directions) {
      auto [ts, unused] = compare(repeats, dir.run, [] {});
      (void)unused;
      result r{"sim-copy",    std::string(dir.name) + "/" + size_name(bytes),
               double(bytes), ts,
               "link-model",  dir.predicted};
      r.extra = {{"bandwidth_gbps", link.bandwidth / 1e9}, {"latency_us", link.latency * 1e6}};
      ctx.report(r);
    }
    char probe = 0;
    copy(ptr<char>(&probe, 0), d1.data() + (bytes - 1), 1).wait();
    if (probe != 3 || back(bytes - 1) != 5)
      throw std::runtime_error("sim-copy benchmark: wrong bytes arrived");
  }
}

// An empty kernel's launch and wait on a sim device at speed 0.25 vs at speed 1: the speed
// model stretches the kernel's own CPU time, not the host's wake-up of the device, so the
// two should take about as long (ratio near 1). Once with one block, once with 1024 (the
// slow device cuts it into 16 chunks, and paces itself after each): nor is the pacing's
// own bookkeeping stretched.
void run_sim_kernel(context& ctx) {
  auto dev = sim_devices(ctx)[0];
  double const configured = sim::speed(dev);
  auto empty = [](auto const&) {};
  for (index_t blocks : {1, 1024}) {
    auto at = [&](double speed) {
      return [&, speed] {
        sim::set_speed(dev, speed);
        launch(dev, grid(blocks), empty).wait();
      };
    };
    auto [slow, fast] = compare(5 * ctx.opts().repeats, at(0.25), at(1.0));
    sim::set_speed(dev, configured);
    std::string const what = blocks == 1 ? "empty" : "empty-1024-blocks";
    result r{"sim-kernel", what + "/speed-0.25", double(blocks), slow, what + "/speed-1", fast};
    r.note = blocks == 1 ? "launch + wait of an empty kernel; ratio near 1: the wake-up is not "
                           "stretched"
                         : "launch + wait of an empty kernel of 1024 blocks (16 chunks at speed "
                           "0.25, 4 at speed 1); ratio near 1: the pacing between chunks is "
                           "not stretched";
    ctx.report(r);
  }
}

struct busy_kernel {
  template <class S>
  void operator()(S const& self, double* out, int iterations) const {
    double x = 0.5;
    for (int i = 0; i < iterations; ++i) x = x * 1.0000001 + std::sin(x) * 1e-9;
    if (self.global_linear_index() == 0) *out = x;
  }
};

void run_overlap(context& ctx) {
  auto dev = sim_devices(ctx)[0];
  auto out = allocate<double, sim_space>(dev, 1);
  int const iterations = ctx.opts().quick ? 200000 : 2000000;
  auto kernel_alone = [&] { launch(dev, grid(1), busy_kernel{}, out, iterations).wait(); };
  auto [tk, unused_k] = compare(3, kernel_alone, [] {});
  (void)unused_k;
  // A copy as long as the kernel, measured (the host's memcpy may be slower than the link
  // model), capped at 256 MiB per buffer.
  auto const& link = dev.info().link;
  auto bytes = std::min<std::size_t>(
      std::size_t{256} << 20,
      static_cast<std::size_t>(std::max(1.0, (tk - link.latency) * link.bandwidth)));
  buffer<char> host(ctx.rt().machine(), bytes);
  buffer<char, 1, sim_space> d(dev, bytes);
  fill(host, char(1)).wait();
  fill(d, char(0)).wait();
  auto [tc, unused_c] = compare(
      3, [&] { copy(d, host).wait(); }, [] {});
  (void)unused_c;
  if (tc > 1.5 * tk || tk > 1.5 * tc)
    bytes = static_cast<std::size_t>(double(bytes) * tk / tc);  // one correction step
  view<char, 1> host_part(host.data(), vec<1>{static_cast<index_t>(std::min(bytes, host.bytes()))});
  view<char, 1, sim_space> dev_part(d.data(), host_part.extent());
  queue compute(dev), transfer(dev), one(dev);
  auto [ts, tp] = compare(
      ctx.opts().repeats,
      [&] {
        auto k = compute.launch(grid(1), busy_kernel{}, out, iterations);
        auto c = transfer.copy(dev_part, host_part);
        wait_all({k, c});
      },
      [&] {
        one.launch(grid(1), busy_kernel{}, out, iterations);
        one.copy(dev_part, host_part);
        one.wait();
      });
  result r{"overlap", "2-queues", double(host_part.size()), ts, "1-queue", tp};
  r.extra = {{"kernel_s", tk}, {"copy_s_measured", tc}};
  ctx.report(r);
  deallocate(out);
}

registrar memcpy_r("memcpy", "256 MiB host-to-host strata::copy vs std::memcpy", run_memcpy);
registrar sim_copy_r("sim-copy", "sim transfers vs the time their link model predicts",
                     run_sim_copy);
registrar sim_kernel_r("sim-kernel",
                       "an empty sim kernel at speed 0.25 vs at speed 1 (launch + wait)",
                       run_sim_kernel);
registrar overlap_r("overlap", "kernel + copy on two sim queues vs back to back on one queue",
                    run_overlap);

}  // namespace
}  // namespace strata::bench
