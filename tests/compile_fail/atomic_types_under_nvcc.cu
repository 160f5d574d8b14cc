// Issue 13, item 4: every atomic operation for every type the host path accepts compiles
// under nvcc for the oldest architecture CUDA 13 targets (sm_75), in device and host code.
// CUDA's atomics have overloads for int, unsigned, (unsigned) long long, float and double
// only; long, std::size_t, index_t, wchar_t, char32_t, enums, pointers and small structs
// must go through a word of their size. With STRATA_SHOULD_FAIL, a type the host rejects
// (a 2-byte integer) is rejected under nvcc too.
#include <strata/exec/atomic.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <cstdint>

namespace {

using namespace strata;

struct two_floats {
  float a, b;
};
enum class color : int { red, green };

template <class T>
STRATA_FN void words(scope s, T* p, T v) {
  (void)atomic_exchange(s, p, v);
  (void)atomic_cas(s, p, v, v);
  (void)atomic_exchange(p, v);
  (void)atomic_cas(p, v, v);
  (void)atomic_load(p);
}
template <class T>
STRATA_FN void arithmetic(scope s, T* p, T v) {
  words(s, p, v);
  (void)atomic_add(s, p, v);
  (void)atomic_sub(s, p, v);
  (void)atomic_min(s, p, v);
  (void)atomic_max(s, p, v);
  (void)atomic_add(p, v);
  (void)atomic_sub(p, v);
  (void)atomic_min(p, v);
  (void)atomic_max(p, v);
}
template <class T>
STRATA_FN void integers(scope s, T* p, T v) {
  arithmetic(s, p, v);
  (void)atomic_and(s, p, v);
  (void)atomic_or(s, p, v);
  (void)atomic_xor(s, p, v);
  (void)atomic_and(p, v);
  (void)atomic_or(p, v);
  (void)atomic_xor(p, v);
}
template <class T>
STRATA_FN void counters(scope s, T* p, T v) {
  integers(s, p, v);
  (void)atomic_inc(s, p, v);
  (void)atomic_dec(s, p, v);
  (void)atomic_inc(p, v);
  (void)atomic_dec(p, v);
}

// Host and device code in one: the host pass uses std::atomic_ref, the device pass
// CUDA's atomics.
STRATA_FN void every_type(scope s, void* q) {
  integers(s, static_cast<int*>(q), 1);
  integers(s, static_cast<long*>(q), 1L);
  integers(s, static_cast<long long*>(q), 1LL);
  integers(s, static_cast<index_t*>(q), index_t{1});
  integers(s, static_cast<std::ptrdiff_t*>(q), std::ptrdiff_t{1});
  integers(s, static_cast<wchar_t*>(q), L'a');
  integers(s, static_cast<char32_t*>(q), U'a');
  counters(s, static_cast<unsigned*>(q), 1u);
  counters(s, static_cast<unsigned long*>(q), 1ul);
  counters(s, static_cast<unsigned long long*>(q), 1ull);
  counters(s, static_cast<std::size_t*>(q), std::size_t{1});
  counters(s, static_cast<std::uint64_t*>(q), std::uint64_t{1});
  arithmetic(s, static_cast<float*>(q), 1.0f);
  arithmetic(s, static_cast<double*>(q), 1.0);
  words(s, static_cast<two_floats*>(q), two_floats{});
  words(s, static_cast<color*>(q), color::green);
  words(s, static_cast<int**>(q), static_cast<int*>(nullptr));
  (void)atomic_load(static_cast<char const*>(q));
  (void)atomic_load(static_cast<bool const*>(q));
#if defined(STRATA_SHOULD_FAIL)
  (void)atomic_add(static_cast<short*>(q), short{1});
#endif
}

__global__ void on_device(scope s, void* q) {
  every_type(s, q);
}

}  // namespace

void on_host(scope s, void* q) {
  every_type(s, q);
  on_device<<<1, 1>>>(s, q);
}
