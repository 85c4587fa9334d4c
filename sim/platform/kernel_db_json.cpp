// Reading and writing kernel-timing databases (the file format of kernel_db.hpp).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim {

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
    g.accumulate = o.optional_boolean("accumulate").value_or(false);
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

// An entry; `source` is optional here (a published database requires it: EntryReader).
KernelDbEntry parse_entry(JsonObject& o) {
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
  e.source = o.optional_string("source").value_or("");
  o.finish();
  return e;
}

std::string optional_text(JsonObject& o, std::string_view key) {
  return o.optional_string(key).value_or("");
}

// The entries, one at a time (from a whole document or streamed from a file).
class EntryReader {
 public:
  explicit EntryReader(std::string file) : file_(std::move(file)) {}

  void add(const nlohmann::json& value, std::size_t i) {
    const std::string path = "$.entries[" + std::to_string(i) + "]";
    JsonObject o(value, file_, path);
    entries_.push_back(parse_entry(o));
    if (entries_.back().source.empty() && !unsourced_) unsourced_ = i;
    auto [it, inserted] = seen_.emplace(exact_key(entries_.back().shape), i);
    if (!inserted) {
      fail_input(file_ + ": " + path, "duplicate shape (" + it->first + "), first at $.entries[" +
                                          std::to_string(it->second) + "]");
    }
  }

  std::vector<KernelDbEntry> take(KernelDbKind kind) {
    if (kind == KernelDbKind::kPublished && unsourced_) {
      fail_input(file_ + ": $.entries[" + std::to_string(*unsourced_) + "].source",
                 "required key is missing");
    }
    return std::move(entries_);
  }

 private:
  std::string file_;
  std::vector<KernelDbEntry> entries_;
  std::unordered_map<std::string, std::size_t> seen_;
  std::optional<std::size_t> unsourced_;
};

// Everything but the entries: the kind and the metadata.
std::pair<KernelDbKind, KernelDbMeta> parse_header(JsonObject& top) {
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
  return {kind, std::move(meta)};
}

}  // namespace

KernelDatabase parse_kernel_database_json(const nlohmann::json& j, const std::string& file) {
  JsonObject top(j, file);
  auto [kind, meta] = parse_header(top);
  const auto& arr = top.raw("entries");
  if (!arr.is_array()) top.fail("entries", "must be an array, got " + json_type_name(arr));
  EntryReader reader(file);
  for (std::size_t i = 0; i < arr.size(); ++i) reader.add(arr[i], i);
  top.finish();
  return KernelDatabase(kind, std::move(meta), reader.take(kind));
}

KernelDatabase load_kernel_database(const std::filesystem::path& path) {
  // Streamed: a measured database holds thousands of entries, each read and dropped in turn
  // rather than held as one document (a third of the time, and little memory).
  EntryReader reader(path.string());
  const nlohmann::json j = load_json_file_streaming(
      path, "entries", [&](const nlohmann::json& e, std::size_t i) { reader.add(e, i); });
  JsonObject top(j, path.string());
  auto [kind, meta] = parse_header(top);
  const auto& arr = top.raw("entries");
  if (!arr.is_array()) top.fail("entries", "must be an array, got " + json_type_name(arr));
  top.finish();
  return KernelDatabase(kind, std::move(meta), reader.take(kind));
}

nlohmann::ordered_json kernel_shape_json(const KernelShape& shape) {
  nlohmann::ordered_json o;
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    o["op"] = op_name(shape);
    o["dtype"] = to_string(g->dtype);
    if (g->layout != GemmLayout::kTN) o["layout"] = to_string(g->layout);
    if (g->accumulate) o["accumulate"] = true;
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
  // The header indented; each entry on a line of its own (a third of the bytes to read, and a
  // diff names the entries that changed).
  j["entries"] = J::array();
  std::string text = j.dump(1);
  const std::string empty = "\"entries\": []";
  const auto at = text.rfind(empty);
  std::string body = "\"entries\": [";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    body += i == 0 ? "\n  " : ",\n  ";
    body += entries[i].dump();
  }
  body += entries.empty() ? "]" : "\n ]";
  text.replace(at, empty.size(), body);
  return text + "\n";
}

}  // namespace trainsim
