// Polymorphic record layouts (Ripple §4.2-4.3): a user struct is described once, as a
// list of named fields, and stored AoS ("contiguous"), SoA ("strided") or AoSoA(N) by a
// template parameter. Elements are reached through proxies whose named access is the same
// for every layout, so one kernel source serves them all.
//
//   struct particle {
//     struct position : strata::field<float, 3> {};
//     struct mass : strata::field<float> {};
//     using fields = strata::fields<position, mass>;
//     template <class R>  // optional named accessors (Ripple §4.3 Accessor)
//     struct access : strata::accessors<R> {
//       STRATA_FN auto& x(int d) { return strata::get<position>(*this, d); }
//     };
//   };
//
// This header holds the descriptions, the layouts' offset maps and the element proxies;
// record_array.hpp the storage, record_copy.hpp the copies between layouts and spaces.
#pragma once

#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace strata {

/// A field of a record: `N` values of `T` (N == 1: a scalar). Users derive a named empty
/// struct from it, which then names the field in get<F>.
template <class T, std::size_t N = 1>
struct field {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "strata::field<T, N>: T must be a non-const trivially copyable type (records move "
                "between memories bytewise)");
  static_assert(N >= 1, "strata::field<T, N>: a field holds at least one value");
  using value_type = T;
  static constexpr std::size_t extent = N;
};

template <class F>
concept record_field = requires {
  typename F::value_type;
  { F::extent } -> std::convertible_to<std::size_t>;
};

/// The fields of a record, in declaration order (Ripple's StorageDescriptor type list).
template <record_field... F>
struct fields {};

/// A record description: a type with `using fields = strata::fields<...>`.
template <class D>
concept record_desc = requires {
  typename D::fields;
};

// Layouts (Ripple §4.2): contiguous elements, strided components, or blocks of N elements
// stored SoA inside each block (what SIMD code wants: a vector of each component).

/// Array of structures: one record after the other (Ripple "contiguous").
struct aos {};
/// Structure of arrays: one array per component, `pitch` elements apart (Ripple "strided").
struct soa {};
/// Blocks of N records, each block SoA. N is a power of two so that blocks of two AoSoA
/// layouts always nest (copies between them are then pitched 3-D copies).
template <std::size_t N>
struct aosoa {
  static_assert(N >= 1 && (N & (N - 1)) == 0, "strata::aosoa<N>: N must be a power of two");
  static constexpr std::size_t block = N;
};

namespace detail {

template <class L>
struct is_aosoa : std::false_type {};
template <std::size_t N>
struct is_aosoa<aosoa<N>> : std::true_type {};

/// One block of an AoSoA: an SoA whose pitch is known at compile time. Proxies of a block
/// address their components affinely, so loops over a block vectorize.
template <std::size_t N>
struct soa_block {};

STRATA_FN constexpr std::size_t align_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

template <class L>
struct fields_of;
template <class... F>
struct fields_of<fields<F...>> {
  static constexpr std::size_t count = sizeof...(F);
  // Functions rather than static arrays: nvcc's device side reads them as constants.
  STRATA_FN static constexpr std::size_t size(std::size_t k) {
    constexpr std::size_t v[] = {sizeof(typename F::value_type)...};
    return v[k];
  }
  STRATA_FN static constexpr std::size_t align(std::size_t k) {
    constexpr std::size_t v[] = {alignof(typename F::value_type)...};
    return v[k];
  }
  STRATA_FN static constexpr std::size_t extent(std::size_t k) {
    constexpr std::size_t v[] = {F::extent...};
    return v[k];
  }
  static constexpr std::size_t max_align = [] {
    std::size_t m = 1;
    for (std::size_t k = 0; k < count; ++k) m = align(k) > m ? align(k) : m;
    return m;
  }();
  template <std::size_t K>
  using field_at = std::tuple_element_t<K, std::tuple<F...>>;
  // Each field listed once: get<F> reaches a field's first listing only.
  template <class G>
  static constexpr std::size_t listings = (std::size_t{0} + ... +
                                           std::size_t{std::is_same_v<G, F>});
  static constexpr bool distinct = ((listings<F> == 1) && ...);
  template <class G>
  static constexpr std::size_t index_of() {
    constexpr bool hit[] = {std::is_same_v<G, F>...};
    std::size_t k = 0;
    while (k < count && !hit[k]) ++k;
    return k;
  }
};

}  // namespace detail

/// Compile-time facts about a record description: its fields, their sizes, and the byte
/// offsets each layout gives them.
template <record_desc D>
struct record_traits {
  using info = detail::fields_of<typename D::fields>;
  // Checked here, where every layout and array of D starts: an empty record has no bytes
  // (its layouts divide by the record size), a field listed twice is storage get<F> never
  // reaches.
  static_assert(info::count >= 1, "strata::record_traits: a record needs at least one field");
  static_assert(info::distinct,
                "strata::record_traits: a field is listed twice; list each field once");
  static constexpr std::size_t field_count = info::count;
  template <std::size_t K>
  using field_at = typename info::template field_at<K>;
  template <std::size_t K>
  using value_at = typename field_at<K>::value_type;
  template <class F>
  static constexpr std::size_t index_of = info::template index_of<F>();
  template <class F>
  static constexpr bool has_field = index_of<F> < field_count;

  /// Bytes of one record in AoS: fields in order, each at its type's alignment.
  STRATA_FN static constexpr std::size_t aos_offset(std::size_t k) {
    std::size_t at = 0;
    for (std::size_t j = 0; j < k; ++j)
      at = detail::align_up(at, info::align(j)) + info::size(j) * info::extent(j);
    return detail::align_up(at, info::align(k));
  }
  static constexpr std::size_t record_bytes = [] {
    std::size_t at = 0;
    for (std::size_t j = 0; j < info::count; ++j)
      at = detail::align_up(at, info::align(j)) + info::size(j) * info::extent(j);
    return detail::align_up(at, info::max_align);
  }();
  /// Where field k's first component array starts in an SoA of `pitch` elements (an AoSoA
  /// block is such an SoA with pitch N).
  STRATA_FN static constexpr std::size_t soa_offset(std::size_t k, std::size_t pitch) {
    std::size_t at = 0;
    for (std::size_t j = 0; j < k; ++j)
      at = detail::align_up(at, info::align(j)) + info::size(j) * info::extent(j) * pitch;
    return detail::align_up(at, info::align(k));
  }
  STRATA_FN static constexpr std::size_t soa_bytes(std::size_t pitch) {
    return detail::align_up(soa_offset(info::count - 1, pitch) +
                                info::size(info::count - 1) * info::extent(info::count - 1) * pitch,
                            info::max_align);
  }
};

namespace detail {

/// A layout's offset map. Component d of field k of element i lies at
/// `start(k, d, pitch) + (i / block) * block_bytes + (i % block) * element_stride(k)`
/// (block == 0: no blocks). The same description drives element access and copies.
template <class L, class D>
struct record_map;

template <class D>
struct record_map<aos, D> {
  using traits = record_traits<D>;
  static constexpr std::size_t block = 0;
  static constexpr std::size_t block_bytes = 0;
  static constexpr index_t pitch_for(index_t n) { return n; }
  static constexpr std::size_t bytes_for(index_t n) {
    return static_cast<std::size_t>(n) * traits::record_bytes;
  }
  /// Bytes of an array whose pitch (pitch_for's result) is `pitch`.
  STRATA_FN static constexpr std::size_t bytes_at_pitch(index_t pitch) {
    return static_cast<std::size_t>(pitch) * traits::record_bytes;
  }
  STRATA_FN static constexpr std::size_t start(std::size_t k, std::size_t d, index_t) {
    return traits::aos_offset(k) + d * traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t element_stride(std::size_t) {
    return traits::record_bytes;
  }
  STRATA_FN static constexpr std::size_t component_stride(std::size_t, index_t) { return 1; }
};

template <class D>
struct record_map<soa, D> {
  using traits = record_traits<D>;
  static constexpr std::size_t block = 0;
  static constexpr std::size_t block_bytes = 0;
  // Component arrays start on 64-byte boundaries (a cache line, an AVX-512 register):
  // with a pitch that is a multiple of 64 elements, every array's start is. A pitch of a
  // multiple of 1024 elements would put all arrays at the same address modulo 4 KiB, so
  // that a loop over them conflicts in the L1's sets (4K aliasing): 64 more break that.
  static constexpr index_t pitch_for(index_t n) {
    index_t p = (n + 63) / 64 * 64;
    return p % 1024 == 0 ? p + 64 : p;
  }
  static constexpr std::size_t bytes_for(index_t n) {
    return n == 0 ? 0 : traits::soa_bytes(static_cast<std::size_t>(pitch_for(n)));
  }
  STRATA_FN static constexpr std::size_t bytes_at_pitch(index_t pitch) {
    return pitch == 0 ? 0 : traits::soa_bytes(static_cast<std::size_t>(pitch));
  }
  STRATA_FN static constexpr std::size_t start(std::size_t k, std::size_t d, index_t pitch) {
    auto p = static_cast<std::size_t>(pitch);
    return traits::soa_offset(k, p) + d * p * traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t element_stride(std::size_t k) {
    return traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t component_stride(std::size_t, index_t pitch) {
    return static_cast<std::size_t>(pitch);
  }
};

template <std::size_t N, class D>
struct record_map<soa_block<N>, D> {
  using traits = record_traits<D>;
  static constexpr std::size_t block = 0;
  static constexpr std::size_t block_bytes = 0;
  STRATA_FN static constexpr std::size_t start(std::size_t k, std::size_t d, index_t) {
    return traits::soa_offset(k, N) + d * N * traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t element_stride(std::size_t k) {
    return traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t component_stride(std::size_t, index_t) { return N; }
};

/// Bytes of an AoSoA block: whole 64-byte cache lines, so that no two blocks (and no two
/// threads writing whole blocks) share a line; a block smaller than a line is rounded to a
/// power of two, so that a line holds whole blocks.
constexpr std::size_t padded_block(std::size_t bytes) {
  if (bytes >= 64) return align_up(bytes, 64);
  std::size_t p = 1;
  while (p < bytes) p *= 2;
  return p;
}

template <std::size_t N, class D>
struct record_map<aosoa<N>, D> {
  using traits = record_traits<D>;
  static constexpr std::size_t block = N;
  static constexpr std::size_t block_bytes = padded_block(traits::soa_bytes(N));
  static constexpr index_t pitch_for(index_t n) { return (n + index_t(N) - 1) / index_t(N) * N; }
  static constexpr std::size_t bytes_for(index_t n) {
    return static_cast<std::size_t>(pitch_for(n)) / N * block_bytes;
  }
  STRATA_FN static constexpr std::size_t bytes_at_pitch(index_t pitch) {
    return static_cast<std::size_t>(pitch) / N * block_bytes;
  }
  STRATA_FN static constexpr std::size_t start(std::size_t k, std::size_t d, index_t) {
    return traits::soa_offset(k, N) + d * N * traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t element_stride(std::size_t k) {
    return traits::info::size(k);
  }
  STRATA_FN static constexpr std::size_t component_stride(std::size_t, index_t) { return N; }
};

/// Elements' bytes before field K's arrays in an SoA of pitch 1, no alignment gaps.
template <class D, std::size_t K>
inline constexpr std::size_t soa_units_v = [] {
  using info = typename record_traits<D>::info;
  std::size_t at = 0;
  // `!=`, not `<`: at K = 0, nvcc (EDG) warns #186 "pointless comparison of unsigned
  // integer with zero" in every user unit that touches an SoA field 0.
  for (std::size_t j = 0; j != K; ++j) at += info::size(j) * info::extent(j);
  return at;
}();

/// k with 2^k == n, for a power of two n (an AoSoA's block).
constexpr int log2_of(std::size_t n) {
  int k = 0;
  while ((std::size_t{1} << k) < n) ++k;
  return k;
}

/// The byte offset of component d of field K of element i (signed: see the AoSoA case).
template <class L, class D, std::size_t K>
STRATA_FN constexpr index_t record_offset(index_t i, std::size_t d, index_t pitch) {
  using M = record_map<L, D>;
  auto const u = static_cast<std::size_t>(i);
  using info = typename record_traits<D>::info;
  if constexpr (requires { M::template offset<K>(i, d, pitch); }) {
    return M::template offset<K>(i, d, pitch);  // a composite layout (record_grouped.hpp)
  } else if constexpr (std::is_same_v<L, soa> && info::max_align <= 64) {
    // pitch_for makes every SoA pitch a multiple of 64 elements, so each component array
    // is whole 64-byte lines and the arrays follow one another without alignment gaps:
    // field K starts at the pitch times a constant. soa_offset's walk over the fields,
    // with the run-time pitch inside, stayed a loop per access in kernels over record
    // iterators and kept them from vectorizing (apps/force, docs/apps.md).
    auto const p = static_cast<std::size_t>(pitch);
    return static_cast<index_t>((soa_units_v<D, K> + d * info::size(K)) * p + u * info::size(K));
  } else if constexpr (M::block != 0) {
    // Floor division by the power-of-two block (a shift and a mask on the signed index):
    // an index below 0 lands in the block before `base`. A tensor's row loop addresses
    // AoSoA cells from their block's start (tensor/split.hpp, cell_kernel::row), and a
    // kernel's offset(dim, -1) from lane 0 reaches the previous block.
    constexpr int shift = log2_of(M::block);
    index_t const block = i >> shift, lane = i & static_cast<index_t>(M::block - 1);
    return static_cast<index_t>(M::start(K, d, pitch)) +
           block * static_cast<index_t>(M::block_bytes) +
           lane * static_cast<index_t>(M::element_stride(K));
  } else {
    return static_cast<index_t>(M::start(K, d, pitch) + u * M::element_stride(K));
  }
}

/// A component index past its field's extent (debug builds check get<F>(d) and
/// vector_ref's operator[]: in release builds such an index reaches another field's bytes).
[[noreturn]] inline void component_out_of_range(std::size_t d, std::size_t extent) {
  throw invalid_argument("record field: component " + std::to_string(d) +
                         " is outside the field's " + std::to_string(extent) +
                         " components; expected an index below " + std::to_string(extent));
}

}  // namespace detail

#if !defined(NDEBUG) && !STRATA_DEVICE_CODE
#define STRATA_CHECK_COMPONENT(d, n) \
  if ((d) >= (n)) ::strata::detail::component_out_of_range((d), (n))
#else
#define STRATA_CHECK_COMPONENT(d, n) (void)0
#endif

/// The components of a vector field of one element, `stride` values apart (1 in AoS).
template <class T, std::size_t N>
class vector_ref {
 public:
  STRATA_FN constexpr vector_ref(T* first, std::size_t stride) noexcept
      : first_(first), stride_(stride) {}
  STRATA_FN constexpr T& operator[](std::size_t d) const {
    STRATA_CHECK_COMPONENT(d, N);
    return first_[d * stride_];
  }
  STRATA_FN static constexpr std::size_t size() noexcept { return N; }

 private:
  T* first_;
  std::size_t stride_;
};

/// Base of a description's named accessors (Ripple §4.3): `template <class R> struct access
/// : strata::accessors<R>`; inside, strata::get<F>(*this[, d]) reaches the element's fields.
template <class R>
struct accessors {};

template <class D, class Self>
struct user_access_of {
  using type = accessors<Self>;
};
template <class D, class Self>
requires requires {
  typename D::template access<Self>;
}
struct user_access_of<D, Self> {
  using type = typename D::template access<Self>;
};

/// Field access shared by proxies and values (CRTP): get<F>() is T& for a scalar field and
/// a vector_ref for a vector field; get<F>(d) is component d; x[F{}] reads as get<F>().
template <record_desc D, class Self>
class record_fields : public user_access_of<D, Self>::type {
  using traits = record_traits<D>;

 public:
  using desc = D;

  template <class F>
  STRATA_FN decltype(auto) get() const {
    return get_impl<F>(static_cast<Self const&>(*this));
  }
  template <class F>
  STRATA_FN decltype(auto) get() {
    return get_impl<F>(static_cast<Self&>(*this));
  }
  template <class F>
  STRATA_FN auto& get(std::size_t d) const {
    STRATA_CHECK_COMPONENT(d, F::extent);
    return *static_cast<Self const&>(*this).template component<field_index<F>()>(d);
  }
  template <class F>
  STRATA_FN auto& get(std::size_t d) {
    STRATA_CHECK_COMPONENT(d, F::extent);
    return *static_cast<Self&>(*this).template component<field_index<F>()>(d);
  }
  template <record_field F>
  STRATA_FN decltype(auto) operator[](F) const {
    return get<F>();
  }
  template <record_field F>
  STRATA_FN decltype(auto) operator[](F) {
    return get<F>();
  }

  /// Calls fn(pointer into a, pointer into b) for every component of every field.
  template <class A, class B, class Fn>
  STRATA_FN static void each_component(A& a, B& b, Fn&& fn) {
    each_field(a, b, fn, std::make_index_sequence<traits::field_count>{});
  }

 private:
  template <class F>
  STRATA_FN static constexpr std::size_t field_index() {
    static_assert(traits::template has_field<F>, "get<F>: F is not a field of this record");
    return traits::template index_of<F>;
  }
  template <class F, class S>
  STRATA_FN static decltype(auto) get_impl(S& self) {
    constexpr std::size_t k = field_index<F>();
    if constexpr (F::extent == 1) {
      return *self.template component<k>(0);
    } else {
      auto* first = self.template component<k>(0);
      return vector_ref<std::remove_reference_t<decltype(*first)>, F::extent>(
          first, self.template component_stride<k>());
    }
  }
  template <class A, class B, class Fn, std::size_t... K>
  STRATA_FN static void each_field(A& a, B& b, Fn& fn, std::index_sequence<K...>) {
    (each_of_field<K>(a, b, fn), ...);
  }
  template <std::size_t K, class A, class B, class Fn>
  STRATA_FN static void each_of_field(A& a, B& b, Fn& fn) {
    for (std::size_t d = 0; d < traits::template field_at<K>::extent; ++d)
      fn(a.template component<K>(d), b.template component<K>(d));
  }
};

/// Field k of the element behind a description's accessors (Ripple §4.3's Accessor).
template <class F, class R>
STRATA_FN decltype(auto) get(accessors<R>& a) {
  return static_cast<R&>(a).template get<F>();
}
template <class F, class R>
STRATA_FN decltype(auto) get(accessors<R> const& a) {
  return static_cast<R const&>(a).template get<F>();
}
template <class F, class R>
STRATA_FN auto& get(accessors<R>& a, std::size_t d) {
  return static_cast<R&>(a).template get<F>(d);
}
template <class F, class R>
STRATA_FN auto& get(accessors<R> const& a, std::size_t d) {
  return static_cast<R const&>(a).template get<F>(d);
}

template <record_desc D>
class record_value;

/// Copies one component between two records' byte stores as bytes, not as a typed
/// assignment: GCC 12 at -O2 (no -march) deleted the whole body of a launched kernel that
/// assigned SoA records to AoS ones of a padded record ({double, int32}) through typed
/// pointers into the stores (tests/tensor/record_test.cpp, RecordTensorAliasing); a
/// fixed-size memcpy compiles to the same moves and carries no aliasing assumption.
struct copy_component {
  template <class T>
  STRATA_FN void operator()(T* to, T const* from) const {
    std::memcpy(to, from, sizeof(T));
  }
};

/// A reference to one element of a record array in layout L: a pointer, the element's
/// index and the array's pitch. It is shallow like T&: copying a proxy copies the
/// reference, assigning to one assigns the element's fields.
template <record_desc D, class L>
class record_ref : public record_fields<D, record_ref<D, L>> {
  using traits = record_traits<D>;
  using base = record_fields<D, record_ref<D, L>>;
  friend base;

 public:
  using layout = L;

  STRATA_FN constexpr record_ref(std::byte* base_address, index_t i, index_t pitch) noexcept
      : base_(base_address), i_(i), pitch_(pitch) {}
  constexpr record_ref(record_ref const&) = default;

  /// Assigns every field from another element (of any layout) or a value.
  STRATA_FN record_ref const& operator=(record_ref const& other) const { return assign(other); }
  template <class Other>
  requires std::is_same_v<typename Other::desc, D> STRATA_FN record_ref const& operator=(
      Other const& other) const {
    return assign(other);
  }
  template <class Other>
  STRATA_FN record_ref const& assign(Other const& other) const {
    base::each_component(*this, other, copy_component{});
    return *this;
  }

  /// The element's fields as a value (Ripple: a polymorphic type used as an object).
  STRATA_FN record_value<D> load() const;
  STRATA_FN operator record_value<D>() const { return load(); }  // NOLINT: a proxy reads as value

  /// A pointer to component d of field K.
  template <std::size_t K>
  STRATA_FN typename traits::template value_at<K>* component(std::size_t d) const {
    return reinterpret_cast<typename traits::template value_at<K>*>(
        base_ + detail::record_offset<L, D, K>(i_, d, pitch_));
  }
  template <std::size_t K>
  STRATA_FN std::size_t component_stride() const {
    return detail::record_map<L, D>::component_stride(K, pitch_);
  }

 private:
  std::byte* base_;
  index_t i_;
  index_t pitch_;
};

/// One record as an object: its fields in AoS order, with the same accessors as proxies.
template <record_desc D>
class record_value : public record_fields<D, record_value<D>> {
  using traits = record_traits<D>;
  using base = record_fields<D, record_value<D>>;
  friend base;

 public:
  record_value() = default;

  template <std::size_t K>
  STRATA_FN typename traits::template value_at<K>* component(std::size_t d) {
    return reinterpret_cast<typename traits::template value_at<K>*>(
        bytes_ + detail::record_offset<aos, D, K>(0, d, 1));
  }
  template <std::size_t K>
  STRATA_FN typename traits::template value_at<K> const* component(std::size_t d) const {
    return reinterpret_cast<typename traits::template value_at<K> const*>(
        bytes_ + detail::record_offset<aos, D, K>(0, d, 1));
  }
  template <std::size_t K>
  STRATA_FN static constexpr std::size_t component_stride() {
    return 1;
  }

  /// Assigns every field from an element of any layout.
  template <class Other>
  requires std::is_same_v<typename Other::desc, D> STRATA_FN record_value& operator=(
      Other const& other) {
    base::each_component(*this, other, copy_component{});
    return *this;
  }

 private:
  alignas(traits::info::max_align) std::byte bytes_[traits::record_bytes] = {};
};

template <record_desc D, class L>
STRATA_FN record_value<D> record_ref<D, L>::load() const {
  record_value<D> v;
  v = *this;
  return v;
}

/// What kernels receive for a record array: a base pointer, a size and a pitch, in layout
/// L (like T* for plain arrays: trivially copyable, no memory space in its type; launch
/// checks the space when it unwraps a record_view into this). A sub-span (a window of an
/// array, record_view::subview) keeps the array's base and pitch and starts at element
/// `first()` of it: an SoA or AoSoA window cannot start at a shifted base pointer.
template <record_desc D, class L>
class record_span {
  using map = detail::record_map<L, D>;

 public:
  using desc = D;
  using layout = L;
  using reference = record_ref<D, L>;

  constexpr record_span() = default;
  STRATA_FN constexpr record_span(std::byte* base, index_t size, index_t pitch,
                                  index_t first = 0) noexcept
      : base_(base), size_(size), pitch_(pitch), first_(first) {}

  STRATA_FN constexpr index_t size() const noexcept { return size_; }
  STRATA_FN constexpr index_t pitch() const noexcept { return pitch_; }
  /// The base of the underlying array (element 0 of it, not of this span).
  STRATA_FN constexpr std::byte* data() const noexcept { return base_; }
  /// This span's element 0 in the underlying array.
  STRATA_FN constexpr index_t first() const noexcept { return first_; }

  STRATA_FN reference operator[](index_t i) const {
#if !defined(NDEBUG) && !STRATA_DEVICE_CODE
    if (i < 0 || i >= size_) out_of_range(i);
#endif
    return reference(base_, first_ + i, pitch_);
  }

  /// Elements [offset, offset + count) of this span.
  record_span subspan(index_t offset, index_t count) const {
    if (offset < 0 || count < 0 || offset > size_ - count)
      throw invalid_argument("record_span::subspan: [" + std::to_string(offset) + ", " +
                             std::to_string(offset) + " + " + std::to_string(count) +
                             ") is outside [0, " + std::to_string(size_) + ")");
    return record_span(base_, count, pitch_, first_ + offset);
  }

 private:
  [[noreturn]] void out_of_range(index_t i) const;

  std::byte* base_ = nullptr;
  index_t size_ = 0;
  index_t pitch_ = 0;
  index_t first_ = 0;
};

template <record_desc D, class L>
void record_span<D, L>::out_of_range(index_t i) const {
  throw invalid_argument("record_span: index " + std::to_string(i) + " is outside [0, " +
                         std::to_string(size_) + ")");
}

// Iterations of for_each_record touch distinct records (the body receives its own element
// only, as every element of a streaming launch is independent), so the compiler may skip
// its run-time alias checks between component arrays, which would otherwise be too many
// (three writes, six reads) for GCC to vectorize the SoA push.
// (Not for clang: its `loop vectorize(assume_safety)` warns in the user's build wherever
// a body cannot be vectorized; tensor/cell_rows.hpp.)
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define STRATA_RECORD_IVDEP _Pragma("GCC ivdep")
#else
#define STRATA_RECORD_IVDEP
#endif

// The loops below inline the body whatever the inliner's budget says (GCC at -O3
// -march=native kept the lambda's operator() as a call inside the AoSoA block loop, and a
// call per lane is a loop that cannot vectorize: 10x slower than SoA).
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define STRATA_RECORD_FLATTEN [[gnu::flatten]]
#else
#define STRATA_RECORD_FLATTEN
#endif

namespace detail {

/// How for_each_record walks a blocked layout (an AoSoA, or field groups of AoSoAs in
/// record_grouped.hpp): `handle at(base, pitch, b)` locates block b once, and
/// `lane(handle, l)` is a proxy for lane l whose addresses are affine in l, so that the
/// loop over a block's lanes vectorizes. Unblocked layouts have none.
template <class D, class L>
struct block_walk {
  static constexpr bool blocked = false;
};

template <class D, std::size_t N>
struct block_walk<D, aosoa<N>> {
  static constexpr bool blocked = true;
  static constexpr index_t block = static_cast<index_t>(N);
  using handle = std::byte*;
  using lane_ref = record_ref<D, soa_block<N>>;
  STRATA_FN static handle at(std::byte* base, index_t, index_t b) {
    return base + static_cast<std::size_t>(b) * record_map<aosoa<N>, D>::block_bytes;
  }
  STRATA_FN static lane_ref lane(handle h, index_t l) { return lane_ref(h, l, block); }
};

/// Lanes [first, last) of one block. `fn` is this function's own copy (a by-value
/// parameter whose address does not escape): the compiler keeps what it captured in
/// registers, instead of reloading a captured `dt` after every store to a component
/// because the store might alias the caller's closure object.
template <class W, class Fn>
STRATA_RECORD_FLATTEN STRATA_FN inline void for_lanes(typename W::handle h, index_t first,
                                                      index_t last, Fn fn) {
  STRATA_RECORD_IVDEP
  for (index_t lane = first; lane < last; ++lane) fn(W::lane(h, lane));
}

/// A whole block: a trip count known at compile time, one vector per component.
template <class W, class Fn>
STRATA_RECORD_FLATTEN STRATA_FN inline void for_block(typename W::handle h, Fn fn) {
  STRATA_RECORD_IVDEP
  for (index_t lane = 0; lane < W::block; ++lane) fn(W::lane(h, lane));
}

/// Elements [first, last) of an unblocked span.
template <class D, class L, class Fn>
STRATA_RECORD_FLATTEN STRATA_FN inline void for_range(std::byte* base, index_t pitch, index_t first,
                                                      index_t last, Fn fn) {
  STRATA_RECORD_IVDEP
  for (index_t i = first; i < last; ++i) fn(record_ref<D, L>(base, i, pitch));
}

}  // namespace detail

/// Calls fn(element) for the indices of `range` (e.g. self.elements(n)). On an AoSoA (or
/// AoSoA field groups) it walks block by block with proxies whose addresses are affine in
/// the lane, so the compiler vectorizes the body; other layouts are a plain loop over
/// span[i]. The body must touch only the element it receives. `fn` is taken by value and
/// copied into each block's loop (see detail::for_lanes): capture scalars by value.
template <record_desc D, class L, class Fn>
STRATA_FN void for_each_record(record_span<D, L> const& span, index_range const& range, Fn fn) {
  if (range.first >= range.last) return;
  // Checked once for the range (debug builds), not per element: a check inside the loop
  // would keep it from vectorizing.
  (void)span[range.first], (void)span[range.last - 1];
  // Indices in the underlying array (a sub-span starts at span.first()).
  index_t const first = range.first + span.first(), last = range.last + span.first();
  using W = detail::block_walk<D, L>;
  if constexpr (W::blocked) {
    constexpr index_t n = W::block;
    std::byte* const base = span.data();
    index_t const pitch = span.pitch();
    index_t const full_first = (first + n - 1) / n, full_last = last / n;
    if (full_first > full_last) {  // inside one block
      detail::for_lanes<W>(W::at(base, pitch, first / n), first % n, (last - 1) % n + 1, fn);
      return;
    }
    if (first < full_first * n)
      detail::for_lanes<W>(W::at(base, pitch, first / n), first % n, n, fn);
    for (index_t block = full_first; block < full_last; ++block)
      detail::for_block<W>(W::at(base, pitch, block), fn);
    if (full_last * n < last) detail::for_lanes<W>(W::at(base, pitch, full_last), 0, last % n, fn);
  } else {
    detail::for_range<D, L>(span.data(), span.pitch(), first, last, fn);
  }
}

/// The same over a GPU thread's grid-strided elements (domain.hpp): one element per step,
/// neighbouring threads on neighbouring elements, which is what coalesces there.
template <record_desc D, class L, class Fn>
STRATA_FN void for_each_record(record_span<D, L> const& span, strided_range const& range, Fn fn) {
  for (auto i : range) fn(span[i]);
}

#undef STRATA_RECORD_IVDEP  // local to for_each_record
#undef STRATA_RECORD_FLATTEN
#undef STRATA_CHECK_COMPONENT

}  // namespace strata
