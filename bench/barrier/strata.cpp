// Block barriers on CPU: a block reduction (each thread sums its elements into the
// scratchpad, then the block combines them) written with barrier() on fibers and as
// phases, on one thread, against a plain loop summing the same array.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "barrier/peer.hpp"
#include "harness.hpp"

namespace strata::bench {
namespace {

constexpr int block_threads = 64;

// Tree reduction in the scratchpad, one barrier per level.
struct reduce_fibers {
  template <class S>
  void operator()(S const& self, double const* x, double* out) const {
    auto block = self.block();
    index_t const t = block.linear_index();
    double* partial = block.template scratchpad<double>(block_threads);
    double s = 0;
    for (auto i : self.elements()) s += x[i];
    partial[t] = s;
    block.barrier();
    for (index_t stride = block_threads / 2; stride > 0; stride /= 2) {
      if (t < stride) partial[t] += partial[t + stride];
      block.barrier();
    }
    if (t == 0) atomic_add(out, partial[0]);
  }
};

struct partial_sum {
  double value = 0;
};

auto reduce_phases() {
  return phases<partial_sum>(
      [](auto const& self, partial_sum& st, double const* x, double*) {
        for (auto i : self.elements()) st.value += x[i];
        self.block().template scratchpad<double>(block_threads)[self.block().linear_index()] =
            st.value;
      },
      [](auto const& self, partial_sum&, double const*, double* out) {
        if (self.block().linear_index() != 0) return;
        double const* partial = self.block().template scratchpad<double>(block_threads);
        double s = 0;
        for (int i = 0; i < block_threads; ++i) s += partial[i];
        atomic_add(out, s);
      });
}

void run_barrier(context& ctx) {
  index_t const elements_per_thread = 64;
  index_t const n = ctx.opts().quick ? index_t{1} << 18 : index_t{1} << 24;
  std::vector<double> x(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) x[i] = static_cast<double>(i % 1000) * 0.5;
  auto s = grid(n / (block_threads * elements_per_thread))
               .block(parallel, block_threads)
               .elements(elements_per_thread)
               .scratchpad(block_threads * sizeof(double));
  auto where = on(ctx.cpus(1), backend_id::serial);
  double plain_sum = 0;
  auto check = [&](double got, char const* what) {
    if (std::abs(got - plain_sum) > 1e-9 * plain_sum)
      throw std::runtime_error(std::string("barrier benchmark: wrong sum via ") + what);
  };
  struct path {
    char const* name;
    std::function<double()> run;
  };
  std::vector<path> paths{{"phases/1",
                           [&] {
                             double out = 0;
                             launch(where, s, reduce_phases(), x.data(), &out).wait();
                             return out;
                           }},
                          {"fibers/1", [&] {
                             double out = 0;
                             launch(where, s, reduce_fibers{}, x.data(), &out).wait();
                             return out;
                           }}};
  for (auto const& p : paths) {
    double got = 0;
    auto [ts, tp] = compare(
        ctx.opts().repeats, [&] { got = p.run(); }, [&] { plain_sum = plain::sum(n, x.data()); });
    check(got, p.name);
    result r{"barrier", p.name, double(n), ts, "plain-loop/1", tp};
    r.extra = {{"block_threads", block_threads},
               {"barriers_per_block", std::log2(block_threads) + 1}};
    ctx.report(r);
  }
}

registrar barrier_r("barrier",
                    "block reduction with barriers (fibers) and as phases vs a plain loop",
                    run_barrier);

}  // namespace
}  // namespace strata::bench
