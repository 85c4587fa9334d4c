#include "sim/platform/kernel_db.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>

namespace trainsim {

const char* to_string(KernelDbKind kind) {
  return kind == KernelDbKind::kPublished ? "published" : "measured";
}

std::string exact_key(const KernelShape& shape) {
  return shape_label(shape);
}

namespace {

// At most this many cells (one bracket per axis) are tried, tightest first, before a query
// falls back to the nearest measured shape: a bound on the search where no complete cell exists.
constexpr std::size_t kMaxCellsTried = std::size_t{1} << 14;

// Coordinates on the interpolation axes (at most three: GEMM m, n, k), unused ones 0.
using Coords = std::array<double, 3>;

double log_distance(double a, double b) {
  return std::abs(std::log(a) - std::log(b));
}

}  // namespace

KernelDatabase::KernelDatabase(KernelDbKind kind, KernelDbMeta meta,
                               std::vector<KernelDbEntry> entries)
    : kind_(kind), meta_(std::move(meta)), entries_(std::move(entries)) {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    exact_.emplace(exact_key(entries_[i].shape), i);
    family_[family_key(entries_[i].shape)].push_back(i);
  }
  index_points();
}

std::string KernelDatabase::family_key(const KernelShape& shape) const {
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    std::string key = op_name(shape) + "/" + to_string(g->dtype);
    if (g->layout != GemmLayout::kTN) key += std::string("/") + to_string(g->layout);
    if (g->accumulate) key += "/acc";
    if (g->groups > 1) key += "/g" + std::to_string(g->groups);
    return key;
  }
  if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    std::string key = "attention/";
    // A published rate stands for both passes (see the header).
    if (kind_ == KernelDbKind::kMeasured) key += std::string(to_string(a->pass)) + "/";
    key += std::string(to_string(a->dtype)) + "/d" + std::to_string(a->head_dim) +
           (a->causal ? "/causal" : "/full");
    return key;
  }
  return "memory/" + std::get<MemoryShape>(shape).op;
}

namespace {

bool width_is_an_axis(const MemoryShape& m) {
  const MemoryOp* op = find_memory_op(m.op);
  return op != nullptr && op->width_is_an_axis;
}

// Interpolation axes of a shape: GEMM m, n, k; attention batch x heads and sequence (published:
// sequence only); memory-bound rows x cols, or rows and cols where the width is an axis of its
// own (MemoryOp::width_is_an_axis). Returns how many.
std::size_t axes(const KernelShape& shape, KernelDbKind kind, Coords& x) {
  x = {};
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    x = {static_cast<double>(g->m), static_cast<double>(g->n), static_cast<double>(g->k)};
    return 3;
  }
  if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    if (kind == KernelDbKind::kPublished) {
      x[0] = static_cast<double>(a->seq);
      return 1;
    }
    x[0] = static_cast<double>(a->batch * a->heads);
    x[1] = static_cast<double>(a->seq);
    return 2;
  }
  const auto& m = std::get<MemoryShape>(shape);
  if (width_is_an_axis(m)) {
    x = {static_cast<double>(m.rows), static_cast<double>(m.cols)};
    return 2;
  }
  x[0] = static_cast<double>(m.rows) * static_cast<double>(m.cols);
  return 1;
}

// How the FLOPs (bytes) grow along each axis: as the coordinate, or as its square (attention's
// sequence length), so that interpolating time linearly in the FLOPs is linear in this power.
std::vector<int> axis_powers(const KernelShape& shape, KernelDbKind kind) {
  if (std::holds_alternative<GemmShape>(shape)) return {1, 1, 1};
  if (std::holds_alternative<AttentionShape>(shape)) {
    return kind == KernelDbKind::kPublished ? std::vector<int>{2} : std::vector<int>{1, 2};
  }
  return width_is_an_axis(std::get<MemoryShape>(shape)) ? std::vector<int>{1, 1}
                                                        : std::vector<int>{1};
}

// Among points at the same coordinates, the one closest to the query in what the axes omit:
// the GQA ratio of attention, the row width of memory-bound ops.
double tie_distance(const KernelShape& point, const KernelShape& query) {
  if (const auto* a = std::get_if<AttentionShape>(&point)) {
    const auto& q = std::get<AttentionShape>(query);
    return log_distance(static_cast<double>(a->heads) / static_cast<double>(a->kv_heads),
                        static_cast<double>(q.heads) / static_cast<double>(q.kv_heads));
  }
  if (const auto* m = std::get_if<MemoryShape>(&point)) {
    return log_distance(static_cast<double>(m->cols),
                        static_cast<double>(std::get<MemoryShape>(query).cols));
  }
  return 0.0;
}

// A pair of measured values around the query on one axis (lo = hi = the query where measured):
// its log span, and the query's place in it (0 at lo, 1 at hi), linear in the axis' power of the
// FLOPs (bytes), or in log space for a published database.
struct Bracket {
  double lo = 0;
  double hi = 0;
  double span = 0;
  double t = 0;
};

Bracket make_bracket(double lo, double hi, double q, int power, bool published) {
  Bracket b{lo, hi, std::log(hi) - std::log(lo), 0};
  if (hi > lo && published) {
    b.t = (std::log(q) - std::log(lo)) / b.span;
  } else if (hi > lo) {
    const double l = std::pow(lo, power), h = std::pow(hi, power);
    b.t = (std::pow(q, power) - l) / (h - l);
  }
  return b;
}

// Brackets of `q` on one axis from its distinct measured values (ascending), tightest first: q
// itself when measured, then every pair of a value below and a value above.
std::vector<Bracket> brackets(const std::vector<double>& values, double q, int power,
                              bool published) {
  std::vector<Bracket> out;
  if (std::binary_search(values.begin(), values.end(), q)) {
    out.push_back(make_bracket(q, q, q, power, published));
  }
  std::vector<double> below;
  std::vector<double> above;
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    if (*it < q) below.push_back(*it);
  }
  for (double v : values) {
    if (v > q) above.push_back(v);
  }
  for (double lo : below) {
    for (double hi : above) out.push_back(make_bracket(lo, hi, q, power, published));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Bracket& a, const Bracket& b) { return a.span < b.span; });
  return out;
}

}  // namespace

TimeSpread KernelDbEntry::spread() const {
  TimeSpread s;
  if (median_s <= 0) return s;
  if (p10_s) s.p10 = *p10_s / median_s;
  if (p90_s) s.p90 = *p90_s / median_s;
  return s;
}

std::optional<KernelDbHit> KernelDatabase::exact(const KernelShape& shape) const {
  const auto it = exact_.find(exact_key(shape));
  if (it == exact_.end()) return std::nullopt;
  const auto& e = entries_[it->second];
  return KernelDbHit{e.median_s, KernelDbMatch::kExact, e.spread()};
}

std::optional<KernelDbHit> KernelDatabase::lookup(const KernelShape& shape) const {
  if (auto hit = exact(shape)) return hit;
  // Interpolations are remembered: plan searches price the same shapes again and again.
  std::string key = exact_key(shape);
  const std::lock_guard<std::mutex> lock(memo_->mutex);
  if (auto it = memo_->hits.find(key); it != memo_->hits.end()) return it->second;
  auto hit = interpolate(shape);
  if (!hit) hit = shorter_attention(shape);
  memo_->hits.emplace(std::move(key), hit);
  return hit;
}

namespace {

// A cell: one bracket per axis (its index in the axis' list, tightest first) and the sum of the
// brackets' log spans (the cell's log volume).
struct Cell {
  double span = 0;
  std::array<std::uint32_t, 3> bracket{};
};

// Heap order: the tightest cell on top; ties in the order of their brackets' indices.
bool looser(const Cell& a, const Cell& b) {
  return a.span > b.span || (a.span == b.span && a.bracket > b.bracket);
}

// Every combination of one bracket per axis, tightest first, made as it is asked for: a cell's
// successors are itself with one bracket loosened, on its last loosened axis or a later one, so
// that each cell has one predecessor and is made once.
class CellQueue {
 public:
  explicit CellQueue(const std::vector<std::vector<Bracket>>& per_axis) : per_axis_(per_axis) {
    Cell first;
    for (const auto& axis : per_axis_) first.span += axis.front().span;
    heap_.push_back(first);
  }
  bool empty() const { return heap_.empty(); }
  Cell pop() {
    std::pop_heap(heap_.begin(), heap_.end(), looser);
    const Cell cell = heap_.back();
    heap_.pop_back();
    std::size_t last = 0;
    for (std::size_t d = 0; d < per_axis_.size(); ++d) {
      if (cell.bracket[d] > 0) last = d;
    }
    for (std::size_t d = last; d < per_axis_.size(); ++d) {
      const std::size_t b = cell.bracket[d];
      if (b + 1 >= per_axis_[d].size()) continue;
      Cell next = cell;
      next.bracket[d] = static_cast<std::uint32_t>(b + 1);
      next.span = 0;
      for (std::size_t e = 0; e < per_axis_.size(); ++e) {
        next.span += per_axis_[e][next.bracket[e]].span;
      }
      heap_.push_back(next);
      std::push_heap(heap_.begin(), heap_.end(), looser);
    }
    return cell;
  }

 private:
  const std::vector<std::vector<Bracket>>& per_axis_;
  std::vector<Cell> heap_;
};

}  // namespace

void KernelDatabase::index_points() {
  for (const auto& [key, members] : family_) {
    FamilyPoints& family = family_points_[key];
    for (std::size_t i : members) {
      Coords x{};
      axes(entries_[i].shape, kind_, x);
      family.by_coords[x].push_back(i);
    }
    for (std::size_t d = 0; d < family.axis_values.size(); ++d) {
      auto& values = family.axis_values[d];
      for (const auto& [x, _] : family.by_coords) values.push_back(x[d]);
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
    }
  }
}

namespace {

// The coordinates of a cell's corner (bit d of `corner`: the high end on axis d) and its weight
// in the multilinear interpolation of the query.
double corner_weight(const std::vector<std::vector<Bracket>>& per_axis, const Cell& cell,
                     std::size_t corner, Coords& x) {
  double weight = 1;
  x = {};
  for (std::size_t d = 0; d < per_axis.size(); ++d) {
    const Bracket& b = per_axis[d][cell.bracket[d]];
    const bool high = ((corner >> d) & 1U) != 0;
    x[d] = high ? b.hi : b.lo;
    weight *= high ? b.t : 1.0 - b.t;
  }
  return weight;
}

// The entry at a cell's corner `x`: where several share its coordinates, the closest to the
// query in what the axes omit (the first of equals); nullptr where none was measured.
const KernelDbEntry* entry_at(const std::vector<KernelDbEntry>& entries,
                              const std::map<Coords, std::vector<std::size_t>>& points,
                              const Coords& x, const KernelShape& shape) {
  const auto it = points.find(x);
  if (it == points.end()) return nullptr;
  const KernelDbEntry* best = nullptr;
  double best_tie = 0;
  for (std::size_t i : it->second) {
    const double tie = tie_distance(entries[i].shape, shape);
    if (best == nullptr || tie < best_tie) {
      best = &entries[i];
      best_tie = tie;
    }
  }
  return best;
}

}  // namespace

std::optional<KernelDbHit> KernelDatabase::interpolate(const KernelShape& shape) const {
  const auto fam = family_points_.find(family_key(shape));
  if (fam == family_points_.end()) return std::nullopt;
  const auto& points = fam->second.by_coords;
  // A measured database interpolates time linearly in each axis' share of the FLOPs (bytes); a
  // published one interpolates the rate in log space, as its rows were taken at other sizes.
  const bool published = kind_ == KernelDbKind::kPublished;
  Coords q{};
  const std::size_t dims = axes(shape, kind_, q);
  const std::vector<int> powers = axis_powers(shape, kind_);
  std::vector<std::vector<Bracket>> per_axis(dims);
  bool above = false;
  for (std::size_t d = 0; d < dims; ++d) {
    const auto& values = fam->second.axis_values[d];
    // Smaller than any measured on one axis: no extrapolation, whatever the other axes.
    if (values.front() > q[d]) return std::nullopt;
    per_axis[d] = brackets(values, q[d], powers[d], published);
    above = above || per_axis[d].empty();
  }
  if (above) return nearest(shape);  // above the measured range on some axis

  CellQueue queue(per_axis);
  for (std::size_t tried = 0; tried < kMaxCellsTried && !queue.empty(); ++tried) {
    const Cell cell = queue.pop();
    double value = 0;
    TimeSpread spread{0, 0};
    bool complete = true;
    for (std::size_t corner = 0; corner < (std::size_t{1} << dims); ++corner) {
      Coords x{};
      const double weight = corner_weight(per_axis, cell, corner, x);
      const KernelDbEntry* e = entry_at(entries_, points, x, shape);
      if (e == nullptr) {
        complete = false;
        break;
      }
      value += weight * (published ? std::log(shape_flops(e->shape) / e->median_s) : e->median_s);
      const TimeSpread corner_spread = e->spread();
      spread.p10 += weight * corner_spread.p10;
      spread.p90 += weight * corner_spread.p90;
    }
    if (!complete) continue;
    return KernelDbHit{published ? shape_flops(shape) / std::exp(value) : value,
                       KernelDbMatch::kInterpolated, spread};
  }
  return nearest(shape);
}

namespace {

// What a kernel's rate is counted in: FLOPs, or bytes for a memory-bound op.
double work(const KernelShape& shape) {
  return std::holds_alternative<MemoryShape>(shape) ? shape_bytes(shape) : shape_flops(shape);
}

}  // namespace

std::optional<KernelDbHit> KernelDatabase::nearest(const KernelShape& shape) const {
  if (kind_ == KernelDbKind::kPublished) return std::nullopt;
  const auto fam = family_.find(family_key(shape));
  if (fam == family_.end() || work(shape) <= 0) return std::nullopt;
  Coords q{};
  const std::size_t dims = axes(shape, kind_, q);
  const KernelDbEntry* best = nullptr;
  double best_distance = 0;
  double best_tie = 0;
  for (std::size_t i : fam->second) {
    const auto& e = entries_[i];
    if (work(e.shape) <= 0 || e.median_s <= 0) continue;
    Coords x{};
    axes(e.shape, kind_, x);
    double distance = 0;
    for (std::size_t d = 0; d < dims; ++d) distance += log_distance(x[d], q[d]);
    const double tie = tie_distance(e.shape, shape);
    if (!best || distance < best_distance || (distance == best_distance && tie < best_tie)) {
      best = &e;
      best_distance = distance;
      best_tie = tie;
    }
  }
  if (!best) return std::nullopt;
  return KernelDbHit{best->median_s * work(shape) / work(best->shape), KernelDbMatch::kNearest,
                     best->spread()};
}

}  // namespace trainsim
