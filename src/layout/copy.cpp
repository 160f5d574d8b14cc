// Layout-changing copies: planning, and the host and device paths (include/strata/layout/
// copy.hpp says which goes where).
#include <strata/error.hpp>
#include <strata/exec/copy.hpp>
#include <strata/layout/copy.hpp>
#include <strata/layout/detail/copy_kernel.hpp>
#include <strata/memory/allocate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>
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

/// Where each k of one side of a copy lives, in elements from the side's base: the strided
/// form when there is one, else a table evaluated once, in k order, on the calling thread
/// (so a user `func` is called once per element and copy, from one thread: PARRAY §2.11's
/// example keeps state).
struct side_map {
  linear_form form;
  std::vector<index_t> table;
  index_t lo = 0, hi = 0;

  index_t at(index_t k) const {
    if (!form.ok) return table[static_cast<std::size_t>(k)];
    index_t off = form.base;
    for (int a = form.count - 1; a >= 0; --a) {
      off += k % form.axes[a].extent * form.axes[a].stride;
      k /= form.axes[a].extent;
    }
    return off;
  }
};

side_map map_of(dimension const& d) {
  side_map m;
  m.form = linear(d);
  if (m.form.ok) {
    std::tie(m.lo, m.hi) = offset_range(d);
    return m;
  }
  m.table.resize(static_cast<std::size_t>(d.size()));
  for (index_t k = 0; k < d.size(); ++k)
    m.table[static_cast<std::size_t>(k)] = node_offset(d.tree(), d.node(), k);
  auto [lo, hi] = std::minmax_element(m.table.begin(), m.table.end());
  m.lo = *lo;
  m.hi = *hi;
  return m;
}

/// Whether every k of the side has its own offset.
bool unique_map(side_map const& m, index_t n) {
  if (m.form.ok && unique_by_strides(m.form)) return true;
  return distinct_offsets(m.lo, m.hi, n, [&](index_t k) { return m.at(k); });
}

/// What a launched element copy reads: both sides' maps (kept alive until it is done).
struct element_job {
  side_map dst, src;
  std::size_t elem;
  std::byte* dbase;
  std::byte const* sbase;
  index_t n;
  void run(index_t first, index_t last) const {
    auto const e = static_cast<index_t>(elem);
    for (index_t k = first; k < last; ++k)
      std::memcpy(dbase + dst.at(k) * e, sbase + src.at(k) * e, elem);
  }
};

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
  void operator()(Self const& self, element_job const* job, index_t per) const {
    for (auto blk : self.elements()) {
      index_t first = static_cast<index_t>(blk) * per;
      job->run(first, std::min(first + per, job->n));
    }
  }
};

index_t processors_of(target const& where) {
  return static_cast<index_t>(std::max<std::size_t>(1, where.where.processors().size()));
}

index_t pieces_for(target const& where, index_t items) {
  return std::max<index_t>(1, std::min(items, 8 * processors_of(where)));
}

/// dst[D(k)] = src[S(k)] on the host for k in [0, n), after deps; `dst` and `src` point at
/// offset 0 of the maps.
event host_permute(after const& deps, target const& where, side_map dm, bool dunique, side_map sm,
                   std::size_t elem, std::byte* dst, std::byte const* src, index_t n) {
  // Divided rather than multiplied: n * elem may wrap (and a huge copy look small).
  bool const small = static_cast<std::size_t>(n) < inline_bytes / std::max<std::size_t>(elem, 1);
  if (dunique && dm.form.ok && sm.form.ok) {
    copy_plan const plan = plan_copy(dm.form, sm.form);
    if (plan.ok) {
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
  }
  auto job =
      std::make_shared<element_job>(element_job{std::move(dm), std::move(sm), elem, dst, src, n});
  if (small && deps.ready()) {
    if (auto err = deps.error()) return event::failed(err);
    job->run(0, n);
    return event::completed();
  }
  // Several k sharing a destination offset: PARRAY §3.2's `y[B(k)] = x[A(k)] for every k`
  // leaves the last such k's element. One thread in k order gives exactly that; threads
  // would race on the shared elements.
  index_t g = dunique ? pieces_for(where, n) : 1;
  index_t per = (n + g - 1) / g;
  g = (n + per - 1) / per;
  event done = launch(deps, where, grid(g), element_kernel{}, job.get(), per);
  done.then([job] {});
  return done;
}

copy_side_desc side(std::byte* p, space_id s, std::uint32_t place_id) {
  return {p, 0, 0, s, place_id};
}

/// Whether pitched rows of `row` bytes, `pitch` apart, in slices `slice` apart, neither
/// overlap nor run backwards (what a device's 2-D/3-D copy accepts).
bool rows_fit(std::size_t row, std::size_t rows, std::size_t pitch, std::size_t slices,
              std::size_t slice) {
  return (rows <= 1 || pitch >= row) && (slices <= 1 || slice >= (rows - 1) * pitch + row);
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
  for (int s = 0; s < 2; ++s)
    if (!rows_fit(row_bytes, rows, pitch[s], slices, spitch[s] ? spitch[s] : pitch[s] * rows))
      return std::nullopt;  // rows that overlap (a sliding window): staged instead
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

/// A device destination written from a compact host buffer: `compact` says where each k's
/// element goes in the buffer, `scatter` moves the buffer's elements to exactly the
/// destination's offsets (nothing between them is touched: another copy may own it).
struct device_scatter {
  side_map compact;
  index_t count = 0;  // elements in the buffer
  struct part {
    index_t dev, host;  // first element's offsets
    index_t run;        // elements per row
    index_t rows;
    index_t dev_pitch, host_pitch;  // elements
    index_t slices = 1;
    index_t dev_slice = 0, host_slice = 0;
  };
  std::vector<part> parts;
};

/// A destination with a strided form whose offsets are all distinct: the buffer holds the
/// elements in increasing offset order (axes sorted by stride), so the scatter is pitched
/// copies of the destination's own runs.
device_scatter scatter_by_form(linear_form const& f) {
  device_scatter s;
  s.compact.form = f;
  s.compact.form.base = 0;
  int order[max_axes];
  for (int a = 0; a < f.count; ++a) order[a] = a;
  std::sort(order, order + f.count,
            [&](int x, int y) { return std::abs(f.axes[x].stride) < std::abs(f.axes[y].stride); });
  index_t w = 1;
  for (int i = 0; i < f.count; ++i) {
    int const a = order[i];
    index_t const ext = f.axes[a].extent;
    bool const back = f.axes[a].stride < 0;  // offsets fall along it: so do positions
    s.compact.form.axes[a].stride = back ? -w : w;
    if (back) s.compact.form.base += (ext - 1) * w;
    w *= ext;
  }
  s.count = w;
  s.compact.lo = 0;
  s.compact.hi = w - 1;
  // Axes from the innermost (smallest stride) out, both sides' strides positive.
  struct ax {
    index_t ext, dev, host;
  };
  std::vector<ax> axes;
  index_t dev0 = f.base;
  for (int i = 0; i < f.count; ++i) {
    int const a = order[i];
    index_t const ext = f.axes[a].extent, st = f.axes[a].stride;
    if (st < 0) dev0 += (ext - 1) * st;
    ax next{ext, st < 0 ? -st : st, std::abs(s.compact.form.axes[a].stride)};
    if (!axes.empty() && axes.back().dev * axes.back().ext == next.dev &&
        axes.back().host * axes.back().ext == next.host)
      axes.back().ext *= ext;  // one longer axis
    else
      axes.push_back(next);
  }
  device_scatter::part p{dev0, 0, 1, 1, 1, 1};
  std::size_t used = 0;
  if (!axes.empty() && axes[0].dev == 1) p.run = axes[used++].ext;  // contiguous rows
  if (used < axes.size()) {
    p.rows = axes[used].ext, p.dev_pitch = axes[used].dev, p.host_pitch = axes[used].host;
    ++used;
  } else {
    p.dev_pitch = p.host_pitch = p.run;
  }
  if (used < axes.size()) {
    p.slices = axes[used].ext, p.dev_slice = axes[used].dev, p.host_slice = axes[used].host;
    ++used;
  } else {
    p.dev_slice = p.dev_pitch * p.rows, p.host_slice = p.host_pitch * p.rows;
  }
  // Axes beyond three: one pitched copy per outer index.
  index_t calls = 1;
  for (std::size_t a = used; a < axes.size(); ++a) calls *= axes[a].ext;
  for (index_t c = 0; c < calls; ++c) {
    index_t rest = c;
    device_scatter::part q = p;
    for (std::size_t a = used; a < axes.size(); ++a) {
      index_t digit = rest % axes[a].ext;
      rest /= axes[a].ext;
      q.dev += digit * axes[a].dev;
      q.host += digit * axes[a].host;
    }
    s.parts.push_back(q);
  }
  return s;
}

/// Any other destination: its offsets sorted, each distinct offset one buffer element
/// (where several k share one, the last k's element is what the buffer ends up with),
/// and maximal runs of consecutive offsets grouped into pitched copies where they repeat
/// with one gap.
device_scatter scatter_by_table(side_map const& dm, index_t n) {
  device_scatter s;
  std::vector<std::pair<index_t, index_t>> by_offset(static_cast<std::size_t>(n));
  for (index_t k = 0; k < n; ++k) by_offset[static_cast<std::size_t>(k)] = {dm.at(k), k};
  std::sort(by_offset.begin(), by_offset.end());
  s.compact.table.resize(static_cast<std::size_t>(n));
  std::vector<index_t> distinct;
  for (auto const& [off, k] : by_offset) {
    if (distinct.empty() || distinct.back() != off) distinct.push_back(off);
    s.compact.table[static_cast<std::size_t>(k)] = static_cast<index_t>(distinct.size()) - 1;
  }
  s.count = static_cast<index_t>(distinct.size());
  s.compact.lo = 0;
  s.compact.hi = s.count - 1;
  index_t i = 0;
  auto const m = static_cast<index_t>(distinct.size());
  auto run_at = [&](index_t at) {
    index_t len = 1;
    while (at + len < m && distinct[static_cast<std::size_t>(at + len)] ==
                               distinct[static_cast<std::size_t>(at)] + len)
      ++len;
    return len;
  };
  while (i < m) {
    index_t const len = run_at(i);
    device_scatter::part p{distinct[static_cast<std::size_t>(i)], i, len, 1, len, len};
    p.dev_slice = p.host_slice = len;
    index_t next = i + len;
    // Following runs of the same length and gap join as further rows.
    while (next < m && run_at(next) == len) {
      index_t gap = distinct[static_cast<std::size_t>(next)] - p.dev;
      if (p.rows == 1) {
        p.dev_pitch = gap;
      } else if (gap != p.rows * p.dev_pitch) {
        break;
      }
      ++p.rows;
      next += len;
    }
    if (p.rows == 1) p.dev_pitch = len;
    p.dev_slice = p.dev_pitch * p.rows;
    p.host_slice = p.host_pitch * p.rows;
    s.parts.push_back(p);
    i = next;
  }
  return s;
}

/// The bytes from element `lo` to element `hi` of one side, and element lo's byte offset;
/// invalid_argument when either overflows: a wrapped span passed the range check (2^61
/// doubles span 2^64 bytes, 0 after wrapping) and the copy ran past the memory.
std::pair<std::size_t, index_t> side_bytes(side_map const& m, std::size_t elem, char const* side,
                                           dimension const& type) {
  auto const e = static_cast<index_t>(elem);
  index_t count = 0, bytes = 0, first = 0;
  if (__builtin_sub_overflow(m.hi, m.lo, &count) || __builtin_add_overflow(count, 1, &count) ||
      __builtin_mul_overflow(count, e, &bytes) || __builtin_mul_overflow(m.lo, e, &first))
    throw invalid_argument(fmt::format(
        "copy: the {} {} spans offsets {} to {} of {}-byte elements, more bytes than an "
        "address space holds; expected a type whose span fits in memory",
        side, to_string(type), m.lo, m.hi, elem));
  return {static_cast<std::size_t>(bytes), first};
}

}  // namespace

event copy_layout(after const& deps, std::optional<target> const& where_in, layout_side dst,
                  layout_side src, std::size_t elem, bool check_ranges) {
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
  index_t const n = dt.size();
  // Each side's offsets once (a user function is called here, once per element).
  side_map dm = map_of(dt);
  side_map sm = map_of(st);
  auto const e = static_cast<index_t>(elem);
  auto const [dspan, doff] = side_bytes(dm, elem, "destination", dt);
  auto const [sspan, soff] = side_bytes(sm, elem, "source", st);
  std::byte* const dfirst = dst.base + doff;
  std::byte* const sfirst = src.base + soff;
  if (check_ranges) {
    check_range(dfirst, dspan, dst.space, "copy destination");
    check_range(sfirst, sspan, src.space, "copy source");
  }
  bool const dh = host_side(dst.space), sh = host_side(src.space);
  // Overlap: both spans in one address space and intersecting. The copy then reads every
  // source element before it writes any (memmove semantics), through a staged source.
  bool const same_space = (dh && sh) || dst.space == src.space;
  auto const da = reinterpret_cast<std::uintptr_t>(dfirst);
  auto const sa = reinterpret_cast<std::uintptr_t>(sfirst);
  bool const overlap = same_space && da < sa + sspan && sa < da + dspan;
  bool const dunique = unique_map(dm, n);
  auto host_target = [&](std::byte* p, std::uint32_t place_id) {
    return where_in ? *where_in : fill_target(p, place_id);
  };
  if (dh && sh && !overlap)
    return host_permute(deps, host_target(dst.base, dst.place_id), std::move(dm), dunique,
                        std::move(sm), elem, dst.base, src.base, n);
  if (!overlap && dunique && !(dh && sh)) {
    copy_plan const plan = dm.form.ok && sm.form.ok ? plan_copy(dm.form, sm.form) : copy_plan{};
    if (auto runs = device_runs(deps, plan, dst, src, elem)) return *runs;
  }

  // Staged through host memory: the source's span is read once (or taken from the host);
  // the permutation writes a compact buffer of exactly the destination's elements when the
  // destination is a device's, and those elements alone are sent (PARRAY §3.2: the copy
  // writes y[B(k)] and nothing else: a concurrent copy may own the elements between).
  struct staging {
    std::vector<std::byte> src, dst;
  };
  auto hold = std::make_shared<staging>();
  std::vector<event> ready;
  std::byte const* hs = src.base;
  if (!sh || overlap) {
    hold->src.resize(sspan);
    ready.push_back(copy_rows(deps, side(hold->src.data(), space_id::host, 0),
                              side(sfirst, src.space, src.place_id), sspan, 1, 1));
    hs = hold->src.data() - sm.lo * e;
  }
  after const staged = ready.empty() ? deps : after(std::move(ready));
  if (dh) {
    event done = host_permute(staged, host_target(dst.base, dst.place_id), std::move(dm), dunique,
                              std::move(sm), elem, dst.base, hs, n);
    done.then([hold] {});
    return done;
  }
  device_scatter scatter =
      dunique && dm.form.ok ? scatter_by_form(dm.form) : scatter_by_table(dm, n);
  hold->dst.resize(static_cast<std::size_t>(scatter.count * e));
  std::byte* const hd = hold->dst.data();
  target const where = where_in ? *where_in : fill_target(hd, 0);
  event permuted = host_permute(staged, where, std::move(scatter.compact), dunique, std::move(sm),
                                elem, hd, hs, n);
  std::vector<event> sent;
  for (auto const& p : scatter.parts) {
    copy_side_desc d{dst.base + p.dev * e, static_cast<std::size_t>(p.dev_pitch * e),
                     static_cast<std::size_t>(p.dev_slice * e), dst.space, dst.place_id};
    copy_side_desc h{hd + p.host * e, static_cast<std::size_t>(p.host_pitch * e),
                     static_cast<std::size_t>(p.host_slice * e), space_id::host, 0};
    sent.push_back(copy_rows(after(permuted), d, h, static_cast<std::size_t>(p.run * e),
                             static_cast<std::size_t>(p.rows), static_cast<std::size_t>(p.slices)));
  }
  event done = sent.size() == 1 ? sent.front() : when_all(after(std::move(sent)));
  done.then([hold] {});  // the staging buffers live until the copy is done
  return done;
}

}  // namespace strata::detail
