// Tensors (Ripple §4.1, §5.3-5.4, Listing 7):
// - tensor-saxpy: a kernel over a tensor's cells (iterators, one launch per block) vs the
//   raw-pointer code a user would write: an OpenMP loop on the host; on 1, 2, 4 sim
//   devices the same raw kernel launched on per-device buffers.
// - tensor-stencil: 2-D 5-point Jacobi with padding 1. On the host against a hand-written
//   OpenMP Jacobi; over 1, 2, 4 sim devices the graph with concurrent_padded_access
//   (each block's kernel starts when its own halo is in) against the same sweeps with the
//   halo exchange finished before any compute starts (the overlap gain).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "tensor/kernels.hpp"
#include "tensor/peer.hpp"

namespace strata::bench {
namespace {

std::vector<place> sim_devices(context& ctx, std::size_t k) {
  auto devs = ctx.rt().machine().slice(isa::sim).descendants(place_type::device);
  if (devs.size() < k) return {};
  devs.resize(k);
  return devs;
}

template <class T, std::size_t N>
std::vector<T> gather(tensor<T, N> const& t) {
  std::vector<T> out(t.size());
  copy(view<T, N>(ptr<T, host_space>(out.data(), 0), t.extent()), t).wait();
  return out;
}

void run_tensor_saxpy(context& ctx) {
  index_t const n = ctx.opts().quick ? index_t{1} << 20 : index_t{1} << 24;
  float const a = 0.5f;
  std::vector<float> hx(static_cast<std::size_t>(n), 1.0f);
  auto check = [&](std::vector<float> const& y, char const* who) {
    for (std::size_t i = 0; i < y.size(); i += 4099)
      if (!(y[i] > 1.0f) || !std::isfinite(y[i]))
        throw std::runtime_error(std::string("tensor-saxpy: ") + who + " computed " +
                                 std::to_string(y[i]));
  };
  for (int t : ctx.thread_counts()) {
    auto cpus = ctx.cpus(t);
    tensor<float, 1> x(std::vector<place>{cpus}, tensor_spec<1>{.extent = {n}});
    tensor<float, 1> y(std::vector<place>{cpus}, tensor_spec<1>{.extent = {n}});
    fill(x, 1.0f).wait();
    fill(y, 1.0f).wait();
    std::vector<float> py(static_cast<std::size_t>(n), 1.0f);
    auto [ts, tp] = compare(
        ctx.opts().repeats, [&] { for_each_cell_and_wait(saxpy_cell{}, x, y, a); },
        [&] { omp::tensor_saxpy(n, a, hx.data(), py.data(), t); });
    check(gather(y), "strata");
    check(py, "the peer");
    result r{"tensor-saxpy",
             "host/" + std::to_string(t),
             double(n),
             ts,
             "omp-loop/" + std::to_string(t),
             tp};
    r.extra = {{"threads", t}};
    ctx.report(r);
  }
  for (std::size_t k : {1, 2, 4}) {
    auto devs = sim_devices(ctx, k);
    if (devs.empty()) {
      ctx.skip("tensor-saxpy", "sim" + std::to_string(k) + ": fewer sim devices");
      continue;
    }
    tensor_spec<1> spec{.extent = {n}, .partitions = {k}};
    tensor<float, 1> x(devs, spec), y(devs, spec);
    fill(x, 1.0f).wait();
    fill(y, 1.0f).wait();
    // The raw side: one buffer pair per device, holding the same cells as the tensor.
    std::vector<buffer<float, 1, sim_space>> rx, ry;
    for (std::size_t b = 0; b < k; ++b) {
      auto cells = static_cast<std::size_t>(x.block(b).extent[0]);
      rx.emplace_back(devs[b], cells);
      ry.emplace_back(devs[b], cells);
      fill(rx.back(), 1.0f).wait();
      fill(ry.back(), 1.0f).wait();
    }
    auto raw = [&] {
      std::vector<event> done;
      for (std::size_t b = 0; b < k; ++b) {
        auto cells = x.block(b).extent[0];
        done.push_back(launch(devs[b], divide_work(devs[b], cells), saxpy_raw{}, a, cells,
                              rx[b].data(), ry[b].data()));
      }
      wait_all(done);
    };
    auto [ts, tp] = compare(
        ctx.opts().repeats, [&] { for_each_cell_and_wait(saxpy_cell{}, x, y, a); }, raw);
    check(gather(y), "strata");
    result r{"tensor-saxpy",
             "sim" + std::to_string(k),
             double(n),
             ts,
             "raw-kernel/sim" + std::to_string(k),
             tp};
    r.extra = {{"devices", double(k)}};
    ctx.report(r);
  }
}

void run_tensor_stencil(context& ctx) {
  index_t const n = ctx.opts().quick ? 256 : 4096;
  int const sweeps = ctx.opts().quick ? 2 : 8;  // even: the result is back in `a`
  auto init = [n](index_t i, index_t j) {
    return static_cast<double>((i * 131 + j * 71) % 97) / 97.0 + (i == j ? 1.0 : 0.0);
  };
  // Host: tensor vs OpenMP, both with a fixed zero ring around the n x n interior.
  for (int t : ctx.thread_counts()) {
    auto cpus = ctx.cpus(t);
    tensor_spec<2> spec{.extent = {n, n}, .padding = 1};
    tensor<double, 2> a(std::vector<place>{cpus}, spec), b(std::vector<place>{cpus}, spec);
    set_boundary(a, boundary::constant<double>{0.0});
    set_boundary(b, boundary::constant<double>{0.0});
    std::vector<double> ha(static_cast<std::size_t>(n * n));
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) ha[static_cast<std::size_t>(i * n + j)] = init(i, j);
    graph g;
    g.then_split(jacobi_cell{}, concurrent_padded_access(a), b)
        .then_split(jacobi_cell{}, concurrent_padded_access(b), a);
    std::size_t const w = static_cast<std::size_t>(n + 2);
    std::vector<double> pa(w * w, 0.0), pb(w * w, 0.0);
    auto reset = [&] {
      copy(a, view<double, 2>(ptr<double, host_space>(ha.data(), 0), vec<2>{n, n})).wait();
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j)
          pa[static_cast<std::size_t>(i + 1) * w + static_cast<std::size_t>(j + 1)] = init(i, j);
    };
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          for (int s = 0; s < sweeps / 2; ++s) run(g).wait();
        },
        [&] { omp::jacobi(n, pa.data(), pb.data(), sweeps, t); });
    // Same sweeps from the same start on both sides: the results agree.
    reset();
    for (int s = 0; s < sweeps / 2; ++s) run(g).wait();
    omp::jacobi(n, pa.data(), pb.data(), sweeps, t);
    auto out = gather(a);
    for (index_t i = 0; i < n; i += 17)
      for (index_t j = 0; j < n; j += 13) {
        double x = out[static_cast<std::size_t>(i * n + j)];
        double y = pa[static_cast<std::size_t>(i + 1) * w + static_cast<std::size_t>(j + 1)];
        if (std::abs(x - y) > 1e-12 * (1 + std::abs(y)))
          throw std::runtime_error("tensor-stencil: cell (" + std::to_string(i) + ", " +
                                   std::to_string(j) + ") is " + std::to_string(x) +
                                   ", the OpenMP peer's " + std::to_string(y));
      }
    result r{"tensor-stencil",
             "host/" + std::to_string(t),
             double(n * n) * sweeps,
             ts,
             "omp-jacobi/" + std::to_string(t),
             tp};
    r.extra = {{"threads", t}, {"sweeps", sweeps}};
    ctx.report(r);
  }
  // sim devices: halo loads overlapped with other blocks' kernels vs finished first.
  for (std::size_t k : {1, 2, 4}) {
    auto devs = sim_devices(ctx, k);
    if (devs.empty()) {
      ctx.skip("tensor-stencil", "sim" + std::to_string(k) + ": fewer sim devices");
      continue;
    }
    tensor_spec<2> spec{
        .extent = {n, n}, .partitions = {k, 1}, .sub_partitions = {2, 1}, .padding = 1};
    tensor<double, 2> a(devs, spec), b(devs, spec);
    set_boundary(a, boundary::constant<double>{0.0});
    set_boundary(b, boundary::constant<double>{0.0});
    fill(a, 1.0).wait();
    fill(b, 1.0).wait();
    graph g;
    g.then_split(jacobi_cell{}, concurrent_padded_access(a), b)
        .then_split(jacobi_cell{}, concurrent_padded_access(b), a);
    auto serialized = [&] {
      for (int s = 0; s < sweeps / 2; ++s) {
        load_padding(a).wait();
        for_each_cell(jacobi_cell{}, a, b).wait();
        load_padding(b).wait();
        for_each_cell(jacobi_cell{}, b, a).wait();
      }
    };
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          for (int s = 0; s < sweeps / 2; ++s) run(g).wait();
        },
        serialized);
    auto out = gather(a);
    if (!(out[static_cast<std::size_t>(n / 2 * n + n / 2)] > 0.0))
      throw std::runtime_error("tensor-stencil: the sim run left no values");
    result r{"tensor-stencil",
             "sim" + std::to_string(k) + "/overlapped",
             double(n * n) * sweeps,
             ts,
             "serialized-halo/sim" + std::to_string(k),
             tp};
    r.extra = {{"devices", double(k)}, {"sweeps", sweeps}};
    r.note =
        "ratio = overlap gain: the same graph sweeps with every halo load finished "
        "before any block's kernel starts";
    ctx.report(r);
  }
}

// tensor-halo: the time of one halo exchange (load_padding) of a 2-D tensor split in rows
// over k sim devices, against what the devices' link model says it must take. Each device
// sends its first and last rows to its neighbours; a sim->sim copy holds the source's
// outgoing and the destination's incoming link at once (the larger latency, the smaller
// bandwidth of the two) and starts when both are free: the model books the copies in the
// order load_padding issues them (block b's halo from b - 1, then from b + 1) and takes the
// last end. (The busiest link's sum, `link_bound_s`, is less from 4 devices on: in that
// order a copy waits for one of its links while the other idles.)
// Two row widths: 4096 doubles (32 KiB, the link latency is 2/3 of the model, so every
// microsecond of thread hand-off shows) and 65536 (512 KiB, bandwidth-bound). The second
// side of each run is the same copies issued by hand between plain device buffers and
// joined (what the exchange costs without the tensor layer): extra `vs_raw_copies`.
void run_tensor_halo(context& ctx) {
  int const exchanges = ctx.opts().quick ? 4 : 20;
  for (index_t const n : {index_t{4096}, index_t{65536}}) {
    if (ctx.opts().quick && n > 4096) break;
    for (std::size_t k : {2, 4}) {
      auto devs = sim_devices(ctx, k);
      if (devs.empty()) {
        ctx.skip("tensor-halo", "sim" + std::to_string(k) + ": fewer sim devices");
        continue;
      }
      // 16 rows per device: the exchange moves the same bytes whatever the height.
      index_t const rows = 16 * static_cast<index_t>(k);
      tensor_spec<2> spec{.extent = {rows, n}, .partitions = {k, 1}, .padding = 1};
      tensor<double, 2> t(devs, spec);
      fill(t, 1.0).wait();
      double model = 0, link_bound = 0;
      {
        std::vector<double> out_free(k, 0.0), in_free(k, 0.0), out_sum(k, 0.0), in_sum(k, 0.0);
        for (std::size_t to = 0; to < k; ++to)
          for (std::size_t from : {to - 1, to + 1}) {
            if (from >= k) continue;  // to - 1 wraps to a huge value at to == 0
            auto const& a = devs[from].info().link;
            auto const& b = devs[to].info().link;
            double const one = std::max(a.latency, b.latency) +
                               double(n) * sizeof(double) / std::min(a.bandwidth, b.bandwidth);
            double const end = std::max(out_free[from], in_free[to]) + one;
            out_free[from] = in_free[to] = end;
            out_sum[from] += one;
            in_sum[to] += one;
            model = std::max(model, end);
            link_bound = std::max({link_bound, out_sum[from], in_sum[to]});
          }
      }
      // By hand: per device a buffer of its two edge rows and two halo rows; device d's
      // first row to d-1's lower halo, its last row to d+1's upper halo.
      std::vector<buffer<double, 2, sim_space>> raw;
      for (std::size_t d = 0; d < k; ++d) {
        raw.emplace_back(devs[d], vec<2>{4, n});
        fill(raw.back(), 1.0).wait();
      }
      auto row = [&](std::size_t d, index_t r) {
        return raw[d].view().window(vec<2>{r, 0}, vec<2>{1, n});
      };
      auto by_hand = [&] {
        std::vector<event> done;
        for (std::size_t d = 0; d < k; ++d) {
          if (d > 0) done.push_back(copy(row(d - 1, 3), row(d, 0)));
          if (d + 1 < k) done.push_back(copy(row(d + 1, 2), row(d, 1)));
        }
        wait_all(done);
      };
      auto [ts, tr] = compare(
          ctx.opts().repeats,
          [&] {
            for (int e = 0; e < exchanges; ++e) load_padding(t).wait();
          },
          [&] {
            for (int e = 0; e < exchanges; ++e) by_hand();
          });
      // The issue cost: how long load_padding takes to return (the copies queued, the
      // joins made), the part of the exchange the host pays before any link time.
      double issued = 0;
      {
        int const tries = 200;
        for (int e = 0; e < tries; ++e) {
          auto const t0 = std::chrono::steady_clock::now();
          event done = load_padding(t);
          issued += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          done.wait();
        }
        issued /= tries;
      }
      double const bytes = double(n) * sizeof(double) * 2 * double(k - 1);
      result r{"tensor-halo",     "sim" + std::to_string(k) + "/rows" + std::to_string(n),
               bytes * exchanges, ts / exchanges,
               "link-model",      model};
      r.extra = {{"devices", double(k)},
                 {"halo_bytes", bytes},
                 {"raw_copies_s", tr / exchanges},
                 {"issue_s", issued},
                 {"link_bound_s", link_bound},
                 {"vs_raw_copies", tr / ts},
                 {"bandwidth_gbps", devs[0].info().link.bandwidth / 1e9},
                 {"latency_us", devs[0].info().link.latency * 1e6}};
      r.note =
          "ratio = modelled / measured time of one exchange (1.0: no cost beyond the link); "
          "vs_raw_copies = the same copies issued by hand between buffers / load_padding";
      ctx.report(r);
    }
  }
}

registrar tensor_saxpy_r("tensor-saxpy",
                         "saxpy over a tensor's cells (iterators, one launch per block) vs an "
                         "OpenMP loop (host) and the raw kernel on 1/2/4 sim devices",
                         run_tensor_saxpy);
registrar tensor_stencil_r("tensor-stencil",
                           "2-D 5-point Jacobi on a padded tensor vs hand-written OpenMP (host); "
                           "overlapped vs serialized halo loads on 1/2/4 sim devices",
                           run_tensor_stencil);
registrar tensor_halo_r("tensor-halo",
                        "one halo exchange of a row-split 2-D tensor over 2/4 sim devices (rows "
                        "of 32 KiB and 512 KiB) vs the devices' link model and hand-issued copies",
                        run_tensor_halo);

}  // namespace
}  // namespace strata::bench
