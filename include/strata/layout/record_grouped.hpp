// Hot/cold field groups (issue 14; Ripple §4.2's layouts, one level up): a record's fields
// split into groups, each group stored as a record array of its own in layout L, one
// region after the other in one allocation:
//
//   using hot = strata::grouped<strata::aosoa<16>,
//                               strata::fields<particle::position, particle::velocity>>;
//   strata::record_array<particle, hot> a(where, n);   // position+velocity, then the rest
//
// A kernel that touches only the fields of one group streams only that group's cache
// lines: in a plain AoSoA<16> of 48-byte particles the push x += v*dt reads 6 of each
// block's 12 lines, and the hardware's stream prefetcher fetches the other 6 as well;
// grouped, the 6 hot lines of every block lie next to each other. Element access, copies
// between any layouts and memories, record tensors and for_each_record (vectorized per
// block of each group) work as for the plain layouts (this header specializes their maps
// and block walks; <strata/layout.hpp> and <strata/strata.hpp> include it).
#pragma once

#include <strata/layout/record.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace strata {

/// Fields stored in groups, each a record array in layout L (aos, soa or aosoa<N>), in the
/// order the groups are listed; the fields no group lists form one more group, last, in
/// their declaration order. Every region starts on a 64-byte line.
template <class L, class... Groups>
struct grouped {
  static_assert(std::is_same_v<L, aos> || std::is_same_v<L, soa> || detail::is_aosoa<L>::value,
                "strata::grouped<L, ...>: L must be aos, soa or aosoa<N>");
  static_assert(sizeof...(Groups) >= 1, "strata::grouped<L, ...>: list at least one group");
  using base_layout = L;
};

namespace detail {

/// A group's own description: its fields, in the group's order.
template <class Fields>
struct group_desc {
  using fields = Fields;
};

template <class... F>
struct fields_cat;
template <>
struct fields_cat<> {
  using type = fields<>;
};
template <class... A>
struct fields_cat<fields<A...>> {
  using type = fields<A...>;
};
template <class... A, class... B, class... Rest>
struct fields_cat<fields<A...>, fields<B...>, Rest...> {
  using type = typename fields_cat<fields<A..., B...>, Rest...>::type;
};

template <class F, class Group>
struct group_has;
template <class F, class... G>
struct group_has<F, fields<G...>> : std::bool_constant<(std::is_same_v<F, G> || ...)> {};

template <class F>
struct field_count_of;
template <class... F>
struct field_count_of<fields<F...>> : std::integral_constant<std::size_t, sizeof...(F)> {};

template <class F, class... G>
inline constexpr bool listed_v = (group_has<F, G>::value || ...);

/// The groups of D's fields under grouped<L, G...>, as a tuple of group descriptions.
template <class All, class... G>
struct group_list;
template <class... F, class... G>
struct group_list<fields<F...>, G...> {
  using rest =
      typename fields_cat<std::conditional_t<listed_v<F, G...>, fields<>, fields<F>>...>::type;
  using type = std::conditional_t<field_count_of<rest>::value == 0, std::tuple<group_desc<G>...>,
                                  std::tuple<group_desc<G>..., group_desc<rest>>>;
  // Each listed field is a field of D, listed once.
  static constexpr bool valid =
      ((field_count_of<G>::value == 0 ? false : true) && ...) &&
      (field_count_of<rest>::value + (field_count_of<G>::value + ...) == sizeof...(F));
};

template <class D, class L, class... G>
struct record_map<grouped<L, G...>, D> {
  using list = group_list<typename D::fields, G...>;
  using groups = typename list::type;
  static_assert(list::valid,
                "strata::grouped: every group must list fields of the record, each field at most "
                "once, no group empty");
  static_assert(record_traits<D>::info::max_align <= 64,
                "strata::grouped: fields aligned beyond 64 bytes are not supported");
  static constexpr std::size_t group_count = std::tuple_size_v<groups>;
  template <std::size_t g>
  using group_at = std::tuple_element_t<g, groups>;
  template <std::size_t g>
  using group_map = record_map<L, group_at<g>>;
  using traits = record_traits<D>;

  /// The group of field K, and K's index in it.
  template <std::size_t K>
  static constexpr std::size_t group_of = [] {
    using F = typename traits::template field_at<K>;
    return []<std::size_t... g>(std::index_sequence<g...>) {
      constexpr bool hit[] = {record_traits<group_at<g>>::template has_field<F>...};
      std::size_t at = 0;
      while (!hit[at]) ++at;
      return at;
    }
    (std::make_index_sequence<group_count>{});
  }();
  template <std::size_t K>
  static constexpr std::size_t index_in_group = record_traits<
      group_at<group_of<K>>>::template index_of<typename traits::template field_at<K>>;

  static constexpr std::size_t block = record_map<L, D>::block;
  static constexpr index_t pitch_for(index_t n) { return record_map<L, D>::pitch_for(n); }

  /// Where group g's region starts in an array of pitch `pitch`.
  template <std::size_t g>
  STRATA_FN static constexpr std::size_t region_start(index_t pitch) {
    if constexpr (g == 0)
      return 0;
    else
      return region_start<g - 1>(pitch) + align_up(group_map<g - 1>::bytes_at_pitch(pitch), 64);
  }
  STRATA_FN static constexpr std::size_t bytes_at_pitch(index_t pitch) {
    return pitch == 0 ? 0 : region_start<group_count>(pitch);
  }
  static constexpr std::size_t bytes_for(index_t n) { return bytes_at_pitch(pitch_for(n)); }

  /// The byte offset of component d of field K of element i (record_offset).
  template <std::size_t K>
  STRATA_FN static constexpr index_t offset(index_t i, std::size_t d, index_t pitch) {
    constexpr std::size_t g = group_of<K>;
    return static_cast<index_t>(region_start<g>(pitch)) +
           record_offset<L, group_at<g>, index_in_group<K>>(i, d, pitch);
  }

  // The per-field forms of the plain maps' members (record_copy's runs; host code).
  static constexpr std::size_t start(std::size_t k, std::size_t d, index_t pitch) {
    return by_field(k, [&]<std::size_t K>() {
      constexpr std::size_t g = group_of<K>;
      return region_start<g>(pitch) + group_map<g>::start(index_in_group<K>, d, pitch);
    });
  }
  static constexpr std::size_t element_stride(std::size_t k) {
    return by_field(k, []<std::size_t K>() {
      return group_map<group_of<K>>::element_stride(index_in_group<K>);
    });
  }
  static constexpr std::size_t block_bytes_of(std::size_t k) {
    return by_field(k, []<std::size_t K>() {
      if constexpr (block == 0)
        return std::size_t{0};
      else
        return group_map<group_of<K>>::block_bytes;
    });
  }
  /// Components of a vector field lie as in the plain layout: 1 (AoS), the pitch (SoA), the
  /// block length (AoSoA) apart, whatever the group.
  STRATA_FN static constexpr std::size_t component_stride(std::size_t k, index_t pitch) {
    return record_map<L, D>::component_stride(k, pitch);
  }

 private:
  template <class Fn>
  static constexpr std::size_t by_field(std::size_t k, Fn fn) {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      std::size_t r = 0;
      ((k == K ? (r = fn.template operator()<K>(), 0) : 0), ...);
      return r;
    }
    (std::make_index_sequence<traits::field_count>{});
  }
};

/// A block's lanes in every group (for_each_record over grouped AoSoAs): the address of
/// block b in each group's region, and the lane; components are affine in the lane.
template <class D, std::size_t N, class... G>
class grouped_lane_ref : public record_fields<D, grouped_lane_ref<D, N, G...>> {
  using map = record_map<grouped<aosoa<N>, G...>, D>;
  using traits = record_traits<D>;
  using base = record_fields<D, grouped_lane_ref>;
  friend base;

 public:
  struct handle {
    std::byte* block[map::group_count];
  };

  STRATA_FN constexpr grouped_lane_ref(handle const& h, index_t lane) noexcept
      : h_(h), lane_(lane) {}
  constexpr grouped_lane_ref(grouped_lane_ref const&) = default;

  STRATA_FN grouped_lane_ref const& operator=(grouped_lane_ref const& other) const {
    return assign(other);
  }
  template <class Other>
  requires std::is_same_v<typename Other::desc, D> STRATA_FN grouped_lane_ref const& operator=(
      Other const& other) const {
    return assign(other);
  }
  template <class Other>
  STRATA_FN grouped_lane_ref const& assign(Other const& other) const {
    base::each_component(*this, other, copy_component{});
    return *this;
  }
  STRATA_FN record_value<D> load() const {
    record_value<D> v;
    v = *this;
    return v;
  }
  STRATA_FN operator record_value<D>() const { return load(); }  // NOLINT: reads as a value

  template <std::size_t K>
  STRATA_FN typename traits::template value_at<K>* component(std::size_t d) const {
    constexpr std::size_t g = map::template group_of<K>;
    using GD = typename map::template group_at<g>;
    return reinterpret_cast<typename traits::template value_at<K>*>(
        h_.block[g] +
        record_offset<soa_block<N>, GD, map::template index_in_group<K>>(lane_, d, index_t(N)));
  }
  template <std::size_t K>
  STRATA_FN static constexpr std::size_t component_stride() {
    return N;
  }

 private:
  handle h_;
  index_t lane_;
};

template <class D, std::size_t N, class... G>
struct block_walk<D, grouped<aosoa<N>, G...>> {
  using map = record_map<grouped<aosoa<N>, G...>, D>;
  static constexpr bool blocked = true;
  static constexpr index_t block = static_cast<index_t>(N);
  using lane_ref = grouped_lane_ref<D, N, G...>;
  using handle = typename lane_ref::handle;
  STRATA_FN static handle at(std::byte* base, index_t pitch, index_t b) {
    return at(base, pitch, b, std::make_index_sequence<map::group_count>{});
  }
  template <std::size_t... g>
  STRATA_FN static handle at(std::byte* base, index_t pitch, index_t b, std::index_sequence<g...>) {
    return handle{{(base + map::template region_start<g>(pitch) +
                    static_cast<std::size_t>(b) * map::template group_map<g>::block_bytes)...}};
  }
  STRATA_FN static lane_ref lane(handle const& h, index_t l) { return lane_ref(h, l); }
};

}  // namespace detail
}  // namespace strata
