#include "kernels/host/database.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "sim/core/error.hpp"

namespace trainsim::kernels {

KernelDbEntry measured_entry(const KernelShape& shape, const std::vector<double>& seconds) {
  const Summary s = summarize(seconds);
  KernelDbEntry e;
  e.shape = shape;
  e.median_s = s.median;
  e.p10_s = s.p10;
  e.p90_s = s.p90;
  e.repetitions = static_cast<std::int64_t>(s.count);
  return e;
}

std::map<std::string, KernelDbEntry> kept_entries(const KernelDatabase& db) {
  std::map<std::string, KernelDbEntry> kept;
  for (const auto& e : db.entries()) kept[shape_label(e.shape)] = e;
  return kept;
}

KernelDatabase run_database(KernelDbMeta meta, const std::vector<KernelShape>& shapes,
                            const RunResults& results) {
  for (const auto& f : results.failures) {
    meta.notes.push_back("not timed, failed its check: " + f);
  }
  std::vector<KernelDbEntry> entries;
  std::set<std::string> selected;
  for (const auto& shape : shapes) {
    const std::string label = shape_label(shape);
    selected.insert(label);
    const auto it = results.samples.find(label);
    if (it == results.samples.end() || it->second.empty()) {
      if (auto k = results.kept.find(label); k != results.kept.end()) entries.push_back(k->second);
      continue;
    }
    entries.push_back(measured_entry(shape, it->second));
    if (auto s = results.sources.find(label); s != results.sources.end()) {
      entries.back().source = s->second;
    }
  }
  for (const auto& [label, e] : results.kept) {
    if (selected.count(label) == 0) entries.push_back(e);
  }
  for (const auto& e : entries) {
    // The GEMM ceilings are plain GEMMs' (an accumulating one does more than its FLOPs).
    if (const auto* g = std::get_if<GemmShape>(&e.shape); g && g->groups == 1 && !g->accumulate) {
      auto& ceiling = g->dtype == DType::kFP8 ? meta.gemm_fp8_tflops : meta.gemm_bf16_tflops;
      const double tflops = shape_flops(e.shape) / e.median_s / 1e12;
      if (!ceiling || tflops > *ceiling) ceiling = tflops;
    } else if (const auto* m = std::get_if<MemoryShape>(&e.shape); m && m->op == "copy") {
      const double gbps = shape_bytes(e.shape) / e.median_s / 1e9;
      if (!meta.copy_GBps || gbps > *meta.copy_GBps) meta.copy_GBps = gbps;
    }
  }
  return KernelDatabase(KernelDbKind::kMeasured, std::move(meta), std::move(entries));
}

namespace {

// "a", then "a; b" when another database says b: each distinct value once, in order.
void join(std::string& into, const std::string& value) {
  if (value.empty() || into == value) return;
  std::size_t at = 0;
  while (at <= into.size()) {
    const std::size_t end = std::min(into.find("; ", at), into.size());
    if (into.compare(at, end - at, value) == 0 && end - at == value.size()) return;
    at = end + 2;
  }
  into = into.empty() ? value : into + "; " + value;
}

void keep_max(std::optional<double>& into, const std::optional<double>& value) {
  if (value && (!into || *value > *into)) into = value;
}

}  // namespace

void join_meta(KernelDbMeta& into, const KernelDbMeta& other) {
  for (auto [to, value] : {std::pair{&into.date, &other.date},
                           {&into.suite_version, &other.suite_version},
                           {&into.driver, &other.driver},
                           {&into.cuda_runtime, &other.cuda_runtime},
                           {&into.cublaslt, &other.cublaslt},
                           {&into.cudnn, &other.cudnn},
                           {&into.method, &other.method}}) {
    join(*to, *value);
  }
  keep_max(into.copy_GBps, other.copy_GBps);
  keep_max(into.gemm_bf16_tflops, other.gemm_bf16_tflops);
  keep_max(into.gemm_fp8_tflops, other.gemm_fp8_tflops);
  for (const auto& n : other.notes) {
    if (std::find(into.notes.begin(), into.notes.end(), n) == into.notes.end()) {
      into.notes.push_back(n);
    }
  }
}

KernelDbMeta resumed_meta(KernelDbMeta resumed, const KernelDbMeta& now) {
  const std::string failed = "not timed, failed its check: ";
  std::erase_if(resumed.notes, [&](const std::string& n) { return n.rfind(failed, 0) == 0; });
  join_meta(resumed, now);
  return resumed;
}

KernelDatabase merge_databases(const std::vector<KernelDatabase>& dbs) {
  if (dbs.empty()) fail_input("merge", "no databases to merge");
  KernelDbMeta meta = dbs.front().meta();
  std::vector<KernelDbEntry> entries;
  std::map<std::string, std::size_t> index;
  for (std::size_t d = 0; d < dbs.size(); ++d) {
    const auto& db = dbs[d];
    const std::string where = "merge: database " + std::to_string(d + 1);
    if (db.kind() != dbs.front().kind()) fail_input(where, "is of another kind than the first");
    const auto& m = db.meta();
    if (m.gpu_name != meta.gpu_name) {
      fail_input(where, "was taken on " + m.gpu_name + ", the first on " + meta.gpu_name);
    }
    if (d > 0) join_meta(meta, m);
    for (const auto& e : db.entries()) {
      auto [it, inserted] = index.emplace(exact_key(e.shape), entries.size());
      if (inserted) {
        entries.push_back(e);
      } else {
        entries[it->second] = e;
      }
    }
  }
  return KernelDatabase(dbs.front().kind(), std::move(meta), std::move(entries));
}

}  // namespace trainsim::kernels
