#include "sim/platform/kernel_db.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim {

const char* to_string(KernelDbKind kind) {
  return kind == KernelDbKind::kPublished ? "published" : "measured";
}

std::string exact_key(const KernelShape& shape) {
  return shape_label(shape);
}

namespace {

// At most this many measured values on each side of the query are tried per axis.
constexpr std::size_t kBracketCandidates = 4;

struct Point {
  std::vector<double> x;  // coordinates (integer-valued, compared exactly)
  double value = 0;       // measured: seconds; published: log(FLOP/s)
  double tie = 0;         // distance to the query in the attributes the coordinates omit
};

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
}

std::string KernelDatabase::family_key(const KernelShape& shape) const {
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    std::string key = op_name(shape) + "/" + to_string(g->dtype);
    if (g->layout != GemmLayout::kTN) key += std::string("/") + to_string(g->layout);
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

// Interpolation axes of a shape: GEMM m, n, k; attention batch x heads and sequence (published:
// sequence only); memory-bound rows x cols.
std::vector<double> axes(const KernelShape& shape, KernelDbKind kind) {
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    return {static_cast<double>(g->m), static_cast<double>(g->n), static_cast<double>(g->k)};
  }
  if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    if (kind == KernelDbKind::kPublished) return {static_cast<double>(a->seq)};
    return {static_cast<double>(a->batch * a->heads), static_cast<double>(a->seq)};
  }
  const auto& m = std::get<MemoryShape>(shape);
  return {static_cast<double>(m.rows) * static_cast<double>(m.cols)};
}

// How the FLOPs (bytes) grow along each axis: as the coordinate, or as its square (attention's
// sequence length), so that interpolating time linearly in the FLOPs is linear in this power.
std::vector<int> axis_powers(const KernelShape& shape, KernelDbKind kind) {
  if (std::holds_alternative<GemmShape>(shape)) return {1, 1, 1};
  if (std::holds_alternative<AttentionShape>(shape)) {
    return kind == KernelDbKind::kPublished ? std::vector<int>{2} : std::vector<int>{1, 2};
  }
  return {1};
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

struct Bracket {
  double lo = 0;
  double hi = 0;
  double span() const { return std::log(hi) - std::log(lo); }
};

// Brackets of `q` on one axis from the measured values, tightest first: q itself when measured,
// then pairs of a value below and a value above.
std::vector<Bracket> brackets(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<Bracket> out;
  if (std::binary_search(values.begin(), values.end(), q)) out.push_back({q, q});
  std::vector<double> below;
  std::vector<double> above;
  for (auto it = values.rbegin(); it != values.rend() && below.size() < kBracketCandidates; ++it) {
    if (*it < q) below.push_back(*it);
  }
  for (double v : values) {
    if (v > q && above.size() < kBracketCandidates) above.push_back(v);
  }
  for (double lo : below) {
    for (double hi : above) out.push_back({lo, hi});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Bracket& a, const Bracket& b) { return a.span() < b.span(); });
  return out;
}

}  // namespace

std::optional<KernelDbHit> KernelDatabase::lookup(const KernelShape& shape) const {
  if (auto it = exact_.find(exact_key(shape)); it != exact_.end()) {
    return KernelDbHit{entries_[it->second].median_s, true};
  }
  return interpolate(shape);
}

std::optional<KernelDbHit> KernelDatabase::interpolate(const KernelShape& shape) const {
  const auto fam = family_.find(family_key(shape));
  if (fam == family_.end()) return std::nullopt;
  const std::vector<double> q = axes(shape, kind_);
  const std::vector<int> powers = axis_powers(shape, kind_);
  const std::size_t dims = q.size();
  // A measured database interpolates time linearly in each axis' share of the FLOPs (bytes); a
  // published one interpolates the rate in log space, as its rows were taken at other sizes.
  const bool published = kind_ == KernelDbKind::kPublished;

  // Measured points by coordinates; where several share them, the closest in what the axes omit.
  std::map<std::vector<double>, Point> points;
  for (std::size_t i : fam->second) {
    const auto& e = entries_[i];
    const double value = published ? std::log(shape_flops(e.shape) / e.median_s) : e.median_s;
    Point p{axes(e.shape, kind_), value, tie_distance(e.shape, shape)};
    auto [it, inserted] = points.emplace(p.x, p);
    if (!inserted && p.tie < it->second.tie) it->second = p;
  }

  std::vector<std::vector<Bracket>> per_axis(dims);
  for (std::size_t d = 0; d < dims; ++d) {
    std::vector<double> values;
    values.reserve(points.size());
    for (const auto& [x, _] : points) values.push_back(x[d]);
    per_axis[d] = brackets(std::move(values), q[d]);
    if (per_axis[d].empty()) return std::nullopt;  // outside the measured range: no extrapolation
  }

  // Every combination of one bracket per axis, tightest (smallest log volume) first.
  std::vector<std::vector<std::size_t>> cells{{}};
  for (std::size_t d = 0; d < dims; ++d) {
    std::vector<std::vector<std::size_t>> next;
    for (const auto& c : cells) {
      for (std::size_t b = 0; b < per_axis[d].size(); ++b) {
        auto n = c;
        n.push_back(b);
        next.push_back(std::move(n));
      }
    }
    cells = std::move(next);
  }
  auto span_of = [&](const std::vector<std::size_t>& c) {
    double s = 0;
    for (std::size_t d = 0; d < dims; ++d) s += per_axis[d][c[d]].span();
    return s;
  };
  std::stable_sort(cells.begin(), cells.end(),
                   [&](const auto& a, const auto& b) { return span_of(a) < span_of(b); });

  const std::size_t corners = std::size_t{1} << dims;
  for (const auto& cell : cells) {
    double value = 0;
    bool complete = true;
    for (std::size_t corner = 0; corner < corners && complete; ++corner) {
      std::vector<double> x(dims);
      double weight = 1;
      for (std::size_t d = 0; d < dims; ++d) {
        const Bracket& b = per_axis[d][cell[d]];
        const bool high = ((corner >> d) & 1U) != 0;
        double t = 0;
        if (b.hi > b.lo && published) {
          t = (std::log(q[d]) - std::log(b.lo)) / b.span();
        } else if (b.hi > b.lo) {
          const double lo = std::pow(b.lo, powers[d]), hi = std::pow(b.hi, powers[d]);
          t = (std::pow(q[d], powers[d]) - lo) / (hi - lo);
        }
        x[d] = high ? b.hi : b.lo;
        weight *= high ? t : 1.0 - t;
      }
      auto it = points.find(x);
      if (it == points.end()) {
        complete = false;
      } else {
        value += weight * it->second.value;
      }
    }
    if (!complete) continue;
    return KernelDbHit{published ? shape_flops(shape) / std::exp(value) : value, false};
  }
  return std::nullopt;
}

// ---- JSON ----

namespace {

constexpr double kMicro = 1e-6;
const RealRange kPositive{0.0, false};

KernelShape parse_shape(JsonObject& o) {
  std::vector<std::string_view> ops = {"gemm", "grouped_gemm", "attention"};
  for (const auto& m : memory_ops()) ops.push_back(m.name);
  const std::string op = o.choice("op", ops);
  auto dtype = [&] { return *parse_dtype(o.choice("dtype", {"bf16", "fp8"})); };
  if (op == "gemm" || op == "grouped_gemm") {
    GemmShape g;
    g.dtype = dtype();
    // A grouped GEMM has at least two groups; one group is a plain "gemm".
    if (op == "grouped_gemm") g.groups = o.integer("groups", {2, std::int64_t{1} << 20});
    if (auto layout = o.optional_choice("layout", {"tn", "nn", "nt"})) {
      g.layout = *parse_gemm_layout(*layout);
      if (g.dtype == DType::kFP8 && g.layout != GemmLayout::kTN) {
        o.fail("layout", "FP8 GEMMs run in the tn layout on Hopper, got " + *layout);
      }
    }
    g.m = o.integer("m");
    g.n = o.integer("n");
    g.k = o.integer("k");
    return g;
  }
  if (op == "attention") {
    AttentionShape a;
    a.pass = *parse_attention_pass(o.choice("pass", {"fwd", "bwd", "fwd+bwd"}));
    a.dtype = dtype();
    a.batch = o.integer("batch");
    a.seq = o.integer("seq");
    a.heads = o.integer("heads");
    a.kv_heads = o.integer("kv_heads");
    a.head_dim = o.integer("head_dim");
    a.causal = o.boolean("causal");
    if (a.heads % a.kv_heads != 0) {
      o.fail("kv_heads", "must divide heads (" + std::to_string(a.heads) + "), got " +
                             std::to_string(a.kv_heads));
    }
    return a;
  }
  MemoryShape m;
  m.op = op;
  m.rows = o.integer("rows");
  m.cols = o.integer("cols");
  return m;
}

KernelDbEntry parse_entry(JsonObject& o, KernelDbKind kind) {
  KernelDbEntry e;
  e.shape = parse_shape(o);
  e.median_s = o.number("median_us", kPositive) * kMicro;
  const auto p10 = o.optional_number("p10_us", kPositive);
  const auto p90 = o.optional_number("p90_us", kPositive);
  if (p10 && *p10 * kMicro > e.median_s * (1 + 1e-12)) {
    o.fail("p10_us", "must not exceed median_us");
  }
  if (p90 && *p90 * kMicro < e.median_s * (1 - 1e-12))
    o.fail("p90_us", "must not be below median_us");
  if (p10) e.p10_s = *p10 * kMicro;
  if (p90) e.p90_s = *p90 * kMicro;
  e.repetitions = o.optional_integer("repetitions");
  if (kind == KernelDbKind::kPublished) {
    e.source = o.string("source");
  } else {
    e.source = o.optional_string("source").value_or("");
  }
  o.finish();
  return e;
}

std::string optional_text(JsonObject& o, std::string_view key) {
  return o.optional_string(key).value_or("");
}

}  // namespace

KernelDatabase parse_kernel_database_json(const nlohmann::json& j, const std::string& file) {
  JsonObject top(j, file);
  top.choice("format", {"trainsim-kernel-db"});
  top.integer("version", {1, 1});
  const auto kind = top.choice("kind", {"measured", "published"}) == "published"
                        ? KernelDbKind::kPublished
                        : KernelDbKind::kMeasured;
  KernelDbMeta meta;
  auto gpu = top.object("gpu");
  meta.gpu_name = gpu.string("name");
  meta.sm_count = gpu.optional_integer("sm_count");
  meta.sm_clock_MHz = gpu.optional_number("sm_clock_MHz", kPositive);
  meta.memory_clock_MHz = gpu.optional_number("memory_clock_MHz", kPositive);
  meta.l2_MiB = gpu.optional_number("l2_MiB", kPositive);
  gpu.finish();

  if (kind == KernelDbKind::kMeasured) {
    auto m = top.object("measurement");
    meta.date = m.string("date");
    meta.suite_version = m.string("suite_version");
    meta.driver = m.string("driver");
    meta.cuda_runtime = m.string("cuda_runtime");
    meta.cublaslt = optional_text(m, "cublaslt");
    meta.cudnn = optional_text(m, "cudnn");
    meta.method = m.string("method");
    m.finish();
  } else if (top.has("measurement")) {
    top.fail("measurement", "a published database has no measurement block");
  }

  if (auto c = top.optional_object("ceilings")) {
    meta.copy_GBps = c->optional_number("copy_GBps", kPositive);
    meta.gemm_bf16_tflops = c->optional_number("gemm_bf16_tflops", kPositive);
    meta.gemm_fp8_tflops = c->optional_number("gemm_fp8_tflops", kPositive);
    c->finish();
  }
  if (top.has("notes")) {
    const auto& notes = top.raw("notes");
    if (!notes.is_array()) top.fail("notes", "must be an array of strings");
    for (const auto& n : notes) {
      if (!n.is_string()) top.fail("notes", "must be an array of strings");
      meta.notes.push_back(n.get<std::string>());
    }
  }

  const auto& arr = top.raw("entries");
  if (!arr.is_array()) top.fail("entries", "must be an array, got " + json_type_name(arr));
  std::vector<KernelDbEntry> entries;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string path = "$.entries[" + std::to_string(i) + "]";
    JsonObject o(arr[i], file, path);
    entries.push_back(parse_entry(o, kind));
    auto [it, inserted] = seen.emplace(exact_key(entries.back().shape), i);
    if (!inserted) {
      fail_input(file + ": " + path, "duplicate shape (" + it->first + "), first at $.entries[" +
                                         std::to_string(it->second) + "]");
    }
  }
  top.finish();
  return KernelDatabase(kind, std::move(meta), std::move(entries));
}

KernelDatabase load_kernel_database(const std::filesystem::path& path) {
  return parse_kernel_database_json(load_json_file(path), path.string());
}

nlohmann::ordered_json kernel_shape_json(const KernelShape& shape) {
  nlohmann::ordered_json o;
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    o["op"] = op_name(shape);
    o["dtype"] = to_string(g->dtype);
    if (g->layout != GemmLayout::kTN) o["layout"] = to_string(g->layout);
    if (g->groups > 1) o["groups"] = g->groups;
    o["m"] = g->m;
    o["n"] = g->n;
    o["k"] = g->k;
  } else if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    o["op"] = "attention";
    o["pass"] = to_string(a->pass);
    o["dtype"] = to_string(a->dtype);
    o["batch"] = a->batch;
    o["seq"] = a->seq;
    o["heads"] = a->heads;
    o["kv_heads"] = a->kv_heads;
    o["head_dim"] = a->head_dim;
    o["causal"] = a->causal;
  } else {
    const auto& ms = std::get<MemoryShape>(shape);
    o["op"] = ms.op;
    o["rows"] = ms.rows;
    o["cols"] = ms.cols;
  }
  return o;
}

std::string kernel_database_json(const KernelDatabase& db) {
  using J = nlohmann::ordered_json;
  const auto& m = db.meta();
  J j;
  j["format"] = "trainsim-kernel-db";
  j["version"] = 1;
  j["kind"] = to_string(db.kind());
  J gpu;
  gpu["name"] = m.gpu_name;
  if (m.sm_count) gpu["sm_count"] = *m.sm_count;
  if (m.sm_clock_MHz) gpu["sm_clock_MHz"] = *m.sm_clock_MHz;
  if (m.memory_clock_MHz) gpu["memory_clock_MHz"] = *m.memory_clock_MHz;
  if (m.l2_MiB) gpu["l2_MiB"] = *m.l2_MiB;
  j["gpu"] = std::move(gpu);
  if (db.kind() == KernelDbKind::kMeasured) {
    J meas;
    meas["date"] = m.date;
    meas["suite_version"] = m.suite_version;
    meas["driver"] = m.driver;
    meas["cuda_runtime"] = m.cuda_runtime;
    if (!m.cublaslt.empty()) meas["cublaslt"] = m.cublaslt;
    if (!m.cudnn.empty()) meas["cudnn"] = m.cudnn;
    meas["method"] = m.method;
    j["measurement"] = std::move(meas);
  }
  if (m.copy_GBps || m.gemm_bf16_tflops || m.gemm_fp8_tflops) {
    J c;
    if (m.copy_GBps) c["copy_GBps"] = *m.copy_GBps;
    if (m.gemm_bf16_tflops) c["gemm_bf16_tflops"] = *m.gemm_bf16_tflops;
    if (m.gemm_fp8_tflops) c["gemm_fp8_tflops"] = *m.gemm_fp8_tflops;
    j["ceilings"] = std::move(c);
  }
  if (!m.notes.empty()) j["notes"] = m.notes;
  J entries = J::array();
  for (const auto& e : db.entries()) {
    J o = kernel_shape_json(e.shape);
    o["median_us"] = e.median_s / kMicro;
    if (e.p10_s) o["p10_us"] = *e.p10_s / kMicro;
    if (e.p90_s) o["p90_us"] = *e.p90_s / kMicro;
    if (e.repetitions) o["repetitions"] = *e.repetitions;
    if (!e.source.empty()) o["source"] = e.source;
    entries.push_back(std::move(o));
  }
  j["entries"] = std::move(entries);
  return j.dump(1) + "\n";
}

}  // namespace trainsim
