// SAXPY the Phalanx way (Phalanx §V-A, Fig. 3): one kernel source, launched on the host's
// processors with each CPU backend, then split over emulated sim devices with copies in
// and out, each device's copies overlapping the other's kernel. Every result is checked
// element by element against a x + y; exits 2 when one differs. Public API only.
#include <strata/strata.hpp>

#include "cli.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

struct saxpy {
  template <class Self>
  STRATA_FN void operator()(Self const& self, float a, strata::index_t n, float const* x,
                            float* y) const {
    for (auto i : self.elements(n)) y[i] = a * x[i] + y[i];
  }
};

template <class Fn>
double seconds(Fn&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {
apps::args const cli(
    "usage: saxpy [--strata-sim-devices=LIST] [--strata-topology=SOURCE]\n  one SAXPY kernel on "
    "every CPU backend, then split over the sim devices");
}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  if (cli.no_options(argc, argv)) return 0;
  strata::place machine = rt.machine();
  strata::index_t const n = 1 << 24;
  float const a = 2.0f;

  strata::buffer<float> x(machine, n), y(machine, n);
  strata::fill(x, 1.0f).wait();

  // Every element of y against a x + y0 (x = 1, y0 = 2: exactly 4 in float): the count of
  // those that differ, and the first.
  float const y0 = 2.0f;
  bool all_ok = true;
  auto verify = [&] {
    float const* xp = x.data().get();
    float const* yp = y.data().get();
    strata::index_t differ = 0, first = -1;
    for (strata::index_t i = 0; i < n; ++i)
      if (!(yp[i] == a * xp[i] + y0)) {
        if (differ++ == 0) first = i;
      }
    all_ok = all_ok && differ == 0;
    if (differ == 0) return std::string("ok");
    return "WRONG: " + std::to_string(differ) + " elements differ from a x + y, the first y[" +
           std::to_string(first) + "] = " + std::to_string(yp[first]) + " (expected " +
           std::to_string(a * xp[first] + y0) + ")";
  };

  std::printf("saxpy of %lld floats\n", static_cast<long long>(n));
  for (auto backend :
       {strata::backend_id::serial, strata::backend_id::threads, strata::backend_id::openmp}) {
    auto where = strata::on(machine.slice(strata::isa::host), backend);
    auto shape = strata::divide_work(where, n);
    strata::fill(y, y0).wait();
    double t =
        seconds([&] { strata::launch(where, shape, saxpy{}, a, n, x.data(), y.data()).wait(); });
    std::printf("  %-8s %7.2f ms   y[n-1] = %g  %s\n", strata::to_string(backend).data(), t * 1e3,
                static_cast<double>(y(n - 1)), verify().c_str());
  }

  // Split over the sim devices: each gets a contiguous part, copied in, computed, copied
  // out, all asynchronous; one queue per device keeps each device's steps in order.
  auto devices = machine.slice(strata::isa::sim).descendants(strata::place_type::device);
  if (devices.empty()) {
    std::printf("no sim devices (run with --strata-sim-devices=2 to split over two)\n");
    return all_ok ? 0 : 2;
  }
  strata::fill(y, y0).wait();
  strata::index_t const part = (n + static_cast<strata::index_t>(devices.size()) - 1) /
                               static_cast<strata::index_t>(devices.size());
  std::vector<strata::buffer<float, 1, strata::sim_space>> dx, dy;
  std::vector<strata::queue> queues;
  for (auto const& d : devices) {
    dx.emplace_back(d, static_cast<std::size_t>(part));
    dy.emplace_back(d, static_cast<std::size_t>(part));
    queues.emplace_back(d);
  }
  double t = seconds([&] {
    std::vector<strata::event> done;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      strata::index_t first = static_cast<strata::index_t>(i) * part;
      strata::index_t count = first + part < n ? part : n - first;
      auto& q = queues[i];
      q.copy(dx[i].data(), x.data() + first, static_cast<std::size_t>(count));
      q.copy(dy[i].data(), y.data() + first, static_cast<std::size_t>(count));
      q.launch(strata::divide_work(devices[i], count), saxpy{}, a, count, dx[i].data(),
               dy[i].data());
      done.push_back(q.copy(y.data() + first, dy[i].data(), static_cast<std::size_t>(count)));
    }
    strata::wait_all(done);
  });
  std::printf("  over %zu sim devices (%s): %.2f ms   y[n-1] = %g  %s\n", devices.size(),
              devices[0].info().attributes.back().second.c_str(), t * 1e3,
              static_cast<double>(y(n - 1)), verify().c_str());
  return all_ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("saxpy", argc, argv, app_main);
}
