// BabelStream's five kernels (copy, scale, add, triad, dot) written once as Strata
// kernels and run on every CPU backend, against raw OpenMP loops at the same thread
// count. Arrays are at least 4x the last-level cache so that both sides stream memory.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "harness.hpp"
#include "stream/peer.hpp"

namespace strata::bench {
namespace {

struct copy_k {
  template <class S>
  void operator()(S const& self, index_t n, double const* a, double* c) const {
    for (auto i : self.elements(n)) c[i] = a[i];
  }
};
struct scale_k {
  template <class S>
  void operator()(S const& self, index_t n, double s, double* b, double const* c) const {
    for (auto i : self.elements(n)) b[i] = s * c[i];
  }
};
struct add_k {
  template <class S>
  void operator()(S const& self, index_t n, double const* a, double const* b, double* c) const {
    for (auto i : self.elements(n)) c[i] = a[i] + b[i];
  }
};
struct triad_k {
  template <class S>
  void operator()(S const& self, index_t n, double s, double* a, double const* b,
                  double const* c) const {
    for (auto i : self.elements(n)) a[i] = b[i] + s * c[i];
  }
};
struct dot_k {
  template <class S>
  void operator()(S const& self, index_t n, double const* a, double const* b, double* sum) const {
    double s = 0;
    for (auto i : self.elements(n)) s += a[i] * b[i];
    atomic_add(sum, s);
  }
};

struct arrays {
  index_t n;
  std::vector<double> a, b, c;
  explicit arrays(index_t size) : n(size), a(size), b(size), c(size) {
    omp::init(n, a.data(), b.data(), c.data(), 2);
  }
};

struct variant {
  backend_id backend;
  int threads;
};

std::vector<variant> variants(context& ctx) {
  std::vector<variant> v;
  for (int t : ctx.thread_counts()) {
    if (t == 1) v.push_back({backend_id::serial, 1});
    v.push_back({backend_id::threads, t});
#if defined(_OPENMP)
    v.push_back({backend_id::openmp, t});
#endif
  }
  return v;
}

index_t stream_elements(context& ctx) {
  if (ctx.opts().quick) return index_t{1} << 20;
  auto bytes = 4 * ctx.last_level_cache();
  index_t n = index_t{1} << 24;  // BabelStream's default order of size
  while (static_cast<std::uint64_t>(n) * sizeof(double) < bytes) n *= 2;
  return n;
}

// Every variant against the raw loop at its thread count. `limit` is the fraction of the
// machine's streaming bandwidth Strata reached, taking as that bound the best bandwidth
// the raw OpenMP loop of the same kernel reached in this run (at any thread count).
template <class Strata, class Peer>
void measure(context& ctx, char const* name, arrays& d, double bytes, Strata&& strata_run,
             Peer&& peer_run) {
  std::vector<result> results;
  double bound = 0;
  for (auto v : variants(ctx)) {
    auto where = on(ctx.cpus(v.threads), v.backend);
    auto s = divide_work(where, d.n);
    auto [ts, tp] = compare(
        ctx.opts().repeats, [&] { strata_run(where, s); }, [&] { peer_run(v.threads); });
    result r{name,
             std::string(to_string(v.backend)) + "/" + std::to_string(v.threads),
             bytes,
             ts,
             "omp-loop/" + std::to_string(v.threads),
             tp};
    r.extra = {
        {"threads", v.threads}, {"strata_gbps", bytes / ts / 1e9}, {"peer_gbps", bytes / tp / 1e9}};
    bound = std::max(bound, bytes / tp);
    results.push_back(std::move(r));
  }
  for (auto& r : results) {
    r.limit = r.size / r.strata_s / bound;
    ctx.report(r);
  }
}

void check(bool ok, char const* what) {
  if (!ok) throw std::runtime_error(std::string("stream benchmark: wrong result in ") + what);
}

void run_stream(context& ctx, std::string const& which) {
  arrays d(stream_elements(ctx));
  double const scalar = 0.4;
  double const n = static_cast<double>(d.n);
  double const w = sizeof(double);
  if (which == "copy")
    measure(
        ctx, "copy", d, 2 * w * n,
        [&](target const& t, auto const& s) {
          launch(t, s, copy_k{}, d.n, d.a.data(), d.c.data()).wait();
        },
        [&](int th) { omp::copy(d.n, d.a.data(), d.c.data(), th); });
  if (which == "scale")
    measure(
        ctx, "scale", d, 2 * w * n,
        [&](target const& t, auto const& s) {
          launch(t, s, scale_k{}, d.n, scalar, d.b.data(), d.c.data()).wait();
        },
        [&](int th) { omp::scale(d.n, scalar, d.b.data(), d.c.data(), th); });
  if (which == "add")
    measure(
        ctx, "add", d, 3 * w * n,
        [&](target const& t, auto const& s) {
          launch(t, s, add_k{}, d.n, d.a.data(), d.b.data(), d.c.data()).wait();
        },
        [&](int th) { omp::add(d.n, d.a.data(), d.b.data(), d.c.data(), th); });
  if (which == "triad") {
    measure(
        ctx, "triad", d, 3 * w * n,
        [&](target const& t, auto const& s) {
          launch(t, s, triad_k{}, d.n, scalar, d.a.data(), d.b.data(), d.c.data()).wait();
        },
        [&](int th) { omp::triad(d.n, scalar, d.a.data(), d.b.data(), d.c.data(), th); });
    check(d.a[d.n / 3] == d.b[d.n / 3] + scalar * d.c[d.n / 3], "triad");
  }
  if (which == "dot") {
    double sum = 0, peer_sum = 0;
    measure(
        ctx, "dot", d, 2 * w * n,
        [&](target const& t, auto const& s) {
          sum = 0;
          launch(t, s, dot_k{}, d.n, d.a.data(), d.b.data(), &sum).wait();
        },
        [&](int th) { peer_sum = omp::dot(d.n, d.a.data(), d.b.data(), th); });
    check(std::abs(sum - peer_sum) <= 1e-9 * std::abs(peer_sum), "dot");
  }
}

registrar copy_r("copy", "BabelStream copy c = a, every CPU backend vs a raw OpenMP loop",
                 [](context& c) { run_stream(c, "copy"); });
registrar scale_r("scale", "BabelStream scale b = s*c vs a raw OpenMP loop",
                  [](context& c) { run_stream(c, "scale"); });
registrar add_r("add", "BabelStream add c = a + b vs a raw OpenMP loop",
                [](context& c) { run_stream(c, "add"); });
registrar triad_r("triad", "BabelStream triad a = b + s*c vs a raw OpenMP loop",
                  [](context& c) { run_stream(c, "triad"); });
registrar dot_r("dot", "BabelStream dot sum(a*b) vs an OpenMP reduction",
                [](context& c) { run_stream(c, "dot"); });

}  // namespace
}  // namespace strata::bench
