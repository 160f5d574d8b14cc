// The public headers under clang, the compiler a consumer may well use (clang 14 rejected
// a structured binding captured by a lambda in record_tensor.hpp until session 26): the
// umbrella header compiles, and a kernel whose threads keep values across barriers at
// different call sites (fiber.hpp's inline switch, as compiled by clang) gives each thread
// its own values on one PU and on the whole machine. Built and run by
// cmake/run_clang_consumer.cmake against the library that GCC built.
#include <strata/strata.hpp>

#include <cstdio>
#include <vector>

namespace {

struct live_values_k {
  template <class Self>
  void operator()(Self const& self, double* out) const {
    auto b = self.block();
    strata::index_t const t = b.linear_index(), k = self.block_index()[0];
    long i0 = t * 7 + k, i1 = t * 11 - k;
    double d0 = 0.5 * static_cast<double>(t), v[4];
    for (int j = 0; j < 4; ++j) v[j] = static_cast<double>(t * 4 + j);
    b.barrier();
    i0 += 1;
    b.barrier();
    d0 *= 2;
    for (int j = 0; j < 4; ++j) v[j] += 1;
    b.barrier();
    i1 -= 1;
    double* o = out + self.global_linear_index() * 3;
    o[0] = static_cast<double>(i0 + i1);
    o[1] = d0;
    o[2] = v[0] + v[1] + v[2] + v[3];
  }
};

template <class Where>
int check(Where const& where, char const* name) {
  strata::index_t const blocks = 3, threads = 20;
  std::vector<double> out(static_cast<std::size_t>(blocks * threads * 3), -1);
  strata::launch(where, strata::grid(blocks).block(strata::parallel, threads), live_values_k{},
                 out.data())
      .wait();
  int bad = 0;
  for (strata::index_t k = 0; k < blocks; ++k)
    for (strata::index_t t = 0; t < threads; ++t) {
      double const* o = out.data() + (k * threads + t) * 3;
      bad += o[0] != static_cast<double>(t * 18) || o[1] != static_cast<double>(t) ||
             o[2] != static_cast<double>(t * 16 + 10);
    }
  if (bad) std::printf("%s: %d threads saw values that were not their own\n", name, bad);
  return bad;
}

}  // namespace

int main() {
  try {
    strata::runtime rt;
    auto const pu = rt.machine().slice(strata::isa::host).processors().front();
    int bad = check(strata::on(pu, strata::backend_id::serial), "one PU (serial)");
    bad += check(rt.machine(), "the machine");
    return bad == 0 ? 0 : 1;
  } catch (strata::error const& e) {
    std::printf("strata::error: %s\n", e.what());
    return 1;
  }
}
