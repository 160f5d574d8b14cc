// Layout-changing copies: planning, and the host and device paths (include/strata/layout/
// copy.hpp says which goes where).
#include <strata/error.hpp>
#include <strata/exec/copy.hpp>
#include <strata/layout/copy.hpp>
#include <strata/layout/detail/copy_kernel.hpp>
#include <strata/memory/allocate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace strata::detail {
namespace {

bool host_side(space_id s) {
  return s == space_id::host || s == space_id::pinned || s == space_id::mapped;
}

// Below this size a copy runs on the calling thread: a launch costs more than it saves.
constexpr std::size_t inline_bytes = std::size_t{256} << 10;
// Device copies in runs shorter than this are staged through host memory instead.
constexpr std::size_t min_device_run = 512;
constexpr index_t max_device_copies = 4096;

struct plan_kernel {
  template <class Self>
  void operator()(Self const& self, byte_plan b, std::byte* dst, std::byte const* src,
                  index_t per) const {
    for (auto blk : self.elements()) {
      index_t first = static_cast<index_t>(blk) * per;
      copy_items(b, dst, src, first, std::min(first + per, b.items));
    }
  }
};

struct element_kernel {
  template <class Self>
  void operator()(Self const& self, dimension dt, dimension st, std::size_t elem, index_t dshift,
                  index_t sshift, std::byte* dst, std::byte const* src, index_t per) const {
    for (auto blk : self.elements()) {
      index_t first = static_cast<index_t>(blk) * per;
      copy_elements(dt, st, elem, dshift, sshift, dst, src, first,
                    std::min(first + per, dt.size()));
    }
  }
};

index_t processors_of(target const& where) {
  return static_cast<index_t>(std::max<std::size_t>(1, where.where.processors().size()));
}

index_t pieces_for(target const& where, index_t items) {
  return std::max<index_t>(1, std::min(items, 8 * processors_of(where)));
}

/// dst[B(k) + dshift] = src[A(k) + sshift] on the host, after deps.
event host_permute(after const& deps, target const& where, copy_plan plan, dimension const& dt,
                   dimension const& st, std::size_t elem, std::byte* dst, index_t dshift,
                   std::byte const* src, index_t sshift) {
  bool const small = static_cast<std::size_t>(dt.size()) * elem < inline_bytes;
  if (!unique_offsets(dt)) {
    // Several k share a destination offset: PARRAY §3.2's `y[B(k)] = x[A(k)] for every k`
    // then leaves the last such k's element. One thread in k order gives exactly that;
    // threads (or tiles) would race on the shared elements.
    return launch(deps, where, grid(1), element_kernel{}, dt, st, elem, dshift, sshift, dst, src,
                  dt.size());
  }
  if (plan.ok) {
    plan.dst_base += dshift;
    plan.src_base += sshift;
    byte_plan b = make_byte_plan(plan, elem);
    if (small && deps.ready()) {
      if (auto err = deps.error()) return event::failed(err);
      copy_items(b, dst, src, 0, b.items);
      return event::completed();
    }
    index_t g = pieces_for(where, b.items);
    index_t per = (b.items + g - 1) / g;
    g = (b.items + per - 1) / per;
    return launch(deps, where, grid(g), plan_kernel{}, b, dst, src, per);
  }
  if (small && deps.ready()) {
    if (auto err = deps.error()) return event::failed(err);
    copy_elements(dt, st, elem, dshift, sshift, dst, src, 0, dt.size());
    return event::completed();
  }
  index_t g = pieces_for(where, dt.size());
  index_t per = (dt.size() + g - 1) / g;
  g = (dt.size() + per - 1) / per;
  return launch(deps, where, grid(g), element_kernel{}, dt, st, elem, dshift, sshift, dst, src,
                per);
}

copy_side_desc side(std::byte* p, space_id s, std::uint32_t place_id) {
  return {p, 0, 0, s, place_id};
}

/// The copy as pitched row copies when its runs are long and regular; nullopt otherwise.
std::optional<event> device_runs(after const& deps, copy_plan const& plan, layout_side const& dst,
                                 layout_side const& src, std::size_t elem) {
  if (!plan.ok) return std::nullopt;
  int const m = plan.count;
  std::size_t row_bytes = elem;
  int inner = m;  // axes [inner, m) are inside one copy_rows call
  if (m > 0) {
    if (plan.axes[m - 1].src != 1 || plan.axes[m - 1].dst != 1) return std::nullopt;
    row_bytes = static_cast<std::size_t>(plan.axes[m - 1].extent) * elem;
    inner = m - 1;
  }
  if (row_bytes < min_device_run && m > 1) return std::nullopt;
  std::size_t pitch[2] = {row_bytes, row_bytes}, spitch[2] = {0, 0};
  std::size_t rows = 1, slices = 1;
  auto positive = [](copy_axis const& a) { return a.src > 0 && a.dst > 0; };
  if (inner > 0 && positive(plan.axes[inner - 1])) {
    --inner;
    rows = static_cast<std::size_t>(plan.axes[inner].extent);
    pitch[0] = static_cast<std::size_t>(plan.axes[inner].dst) * elem;
    pitch[1] = static_cast<std::size_t>(plan.axes[inner].src) * elem;
    if (inner > 0 && positive(plan.axes[inner - 1])) {
      --inner;
      slices = static_cast<std::size_t>(plan.axes[inner].extent);
      spitch[0] = static_cast<std::size_t>(plan.axes[inner].dst) * elem;
      spitch[1] = static_cast<std::size_t>(plan.axes[inner].src) * elem;
    }
  }
  index_t calls = 1;
  for (int a = 0; a < inner; ++a) calls *= plan.axes[a].extent;
  if (calls > max_device_copies) return std::nullopt;
  std::vector<event> parts;
  auto const e = static_cast<index_t>(elem);
  for (index_t c = 0; c < calls; ++c) {
    index_t rest = c, so = plan.src_base, doff = plan.dst_base;
    for (int a = inner - 1; a >= 0; --a) {
      index_t digit = rest % plan.axes[a].extent;
      rest /= plan.axes[a].extent;
      so += digit * plan.axes[a].src;
      doff += digit * plan.axes[a].dst;
    }
    copy_side_desc d{dst.base + doff * e, pitch[0], spitch[0] ? spitch[0] : pitch[0] * rows,
                     dst.space, dst.place_id};
    copy_side_desc s{src.base + so * e, pitch[1], spitch[1] ? spitch[1] : pitch[1] * rows,
                     src.space, src.place_id};
    parts.push_back(copy_rows(deps, d, s, row_bytes, rows, slices));
  }
  if (parts.size() == 1) return parts.front();
  return when_all(after(std::move(parts)));
}

}  // namespace

event copy_layout(after const& deps, std::optional<target> const& where_in, layout_side dst,
                  layout_side src, std::size_t elem) {
  dimension const& dt = *dst.type;
  dimension const& st = *src.type;
  if (dt.size() != st.size())
    throw invalid_argument(fmt::format(
        "copy: destination {} ({} elements) and source {} ({} elements) differ in size; "
        "expected array types of equal size",
        to_string(dt), dt.size(), to_string(st), st.size()));
  if (!dst.base || !src.base)
    throw invalid_argument(std::string("copy: the ") + (dst.base ? "source" : "destination") +
                           " is a null pointer");
  auto [dlo, dhi] = offset_range(dt);
  auto [slo, shi] = offset_range(st);
  auto const e = static_cast<index_t>(elem);
#if !defined(NDEBUG)
  check_range(dst.base + dlo * e, static_cast<std::size_t>((dhi - dlo + 1) * e), dst.space,
              "copy destination");
  check_range(src.base + slo * e, static_cast<std::size_t>((shi - slo + 1) * e), src.space,
              "copy source");
#endif
  copy_plan const plan = plan_copy(linear(dt), linear(st));
  bool const dh = host_side(dst.space), sh = host_side(src.space);
  auto host_target = [&](std::byte* p, std::uint32_t place_id) {
    return where_in ? *where_in : fill_target(p, place_id);
  };
  if (dh && sh)
    return host_permute(deps, host_target(dst.base, dst.place_id), plan, dt, st, elem, dst.base, 0,
                        src.base, 0);
  if (auto runs = device_runs(deps, plan, dst, src, elem)) return *runs;

  // Stage device data through host memory, permute there, and send the result back.
  struct staging {
    std::vector<std::byte> src, dst;
  };
  auto hold = std::make_shared<staging>();
  std::vector<event> ready;
  std::byte const* hs = src.base;
  std::byte* hd = dst.base;
  index_t sshift = 0, dshift = 0;
  if (!sh) {
    hold->src.resize(static_cast<std::size_t>((shi - slo + 1) * e));
    ready.push_back(copy_rows(deps, side(hold->src.data(), space_id::host, 0),
                              side(src.base + slo * e, src.space, src.place_id), hold->src.size(),
                              1, 1));
    hs = hold->src.data();
    sshift = -slo;
  }
  if (!dh) {
    // Read the destination's span first: the elements between the copied ones stay.
    hold->dst.resize(static_cast<std::size_t>((dhi - dlo + 1) * e));
    ready.push_back(copy_rows(deps, side(hold->dst.data(), space_id::host, 0),
                              side(dst.base + dlo * e, dst.space, dst.place_id), hold->dst.size(),
                              1, 1));
    hd = hold->dst.data();
    dshift = -dlo;
  }
  target const where = where_in ? *where_in : fill_target(hd, dh ? dst.place_id : 0);
  event permuted =
      host_permute(after(std::move(ready)), where, plan, dt, st, elem, hd, dshift, hs, sshift);
  event done = permuted;
  if (!dh)
    done = copy_rows(after(permuted), side(dst.base + dlo * e, dst.space, dst.place_id),
                     side(hold->dst.data(), space_id::host, 0), hold->dst.size(), 1, 1);
  done.then([hold] {});  // the staging buffers live until the copy is done
  return done;
}

}  // namespace strata::detail
