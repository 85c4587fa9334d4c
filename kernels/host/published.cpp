#include "kernels/host/published.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::kernels {

namespace {

constexpr double kTera = 1e12;
constexpr const char* kGemmFile = "h100_gemm_max_achievable_tflops.json";
constexpr const char* kAttentionFile = "flashattention_h100_kernel_tflops.json";

const nlohmann::json& field(const nlohmann::json& row, const std::string& key,
                            const std::string& where) {
  auto it = row.find(key);
  if (it == row.end()) fail_input(where + "." + key, "required key is missing");
  return *it;
}

std::int64_t parse_dim(const std::string& text, std::size_t& pos, const std::string& where) {
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(text.substr(pos), &used);
  } catch (const std::exception&) {
    fail_input(where, "expected MxNxK, got \"" + text + "\"");
  }
  pos += used;
  if (pos < text.size()) {
    if (text[pos] != 'x') fail_input(where, "expected MxNxK, got \"" + text + "\"");
    ++pos;
  }
  return v;
}

std::string number(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

// GEMM ceilings: the best measured matmul rate per element type on H100 SXM, each also kept as
// the database's BF16 or FP8 ceiling in `meta`.
void add_gemm_entries(std::vector<KernelDbEntry>& entries, KernelDbMeta& meta,
                      const std::filesystem::path& refdata_dir, const std::string& cited_as) {
  const auto gemm = load_json_file(refdata_dir / kGemmFile);
  const auto& gemm_rows = field(gemm, "rows", std::string(kGemmFile) + ": $");
  for (std::size_t i = 0; i < gemm_rows.size(); ++i) {
    const auto& row = gemm_rows[i];
    const std::string where = std::string(kGemmFile) + ": $.rows[" + std::to_string(i) + "]";
    if (field(row, "accelerator", where).get<std::string>() != "NVIDIA H100 SXM") continue;
    const std::string dt = field(row, "dtype", where).get<std::string>();
    const DType dtype = dt.rfind("FP8", 0) == 0 ? DType::kFP8 : DType::kBF16;
    if (dtype == DType::kBF16 && dt != "BF16") continue;
    const std::string shape_text = field(row, "best_shape_MxNxK", where).get<std::string>();
    std::size_t pos = 0;
    const auto m = parse_dim(shape_text, pos, where + ".best_shape_MxNxK");
    const auto n = parse_dim(shape_text, pos, where + ".best_shape_MxNxK");
    const auto k = parse_dim(shape_text, pos, where + ".best_shape_MxNxK");
    const double tflops = field(row, "mamf_tflops", where).get<double>();
    KernelDbEntry e;
    e.shape = GemmShape{m, n, k, dtype};
    e.median_s = shape_flops(e.shape) / (tflops * kTera);
    e.source = cited_as + "/" + kGemmFile + " $.rows[" + std::to_string(i) +
               "]: " + field(row, "accelerator", where).get<std::string>() + " " + dt + " " +
               shape_text + " at " + number(tflops) + " TFLOP/s (mamf-finder, torch " +
               field(row, "torch", where).get<std::string>() + ")";
    (dtype == DType::kFP8 ? meta.gemm_fp8_tflops : meta.gemm_bf16_tflops) = tflops;
    entries.push_back(std::move(e));
  }
}

// Attention: FlashAttention-2 forward + backward on H100 80GB SXM5.
void add_attention_entries(std::vector<KernelDbEntry>& entries,
                           const std::filesystem::path& refdata_dir, const std::string& cited_as) {
  const auto fa = load_json_file(refdata_dir / kAttentionFile);
  const auto& fa_rows = field(fa, "rows", std::string(kAttentionFile) + ": $");
  for (std::size_t i = 0; i < fa_rows.size(); ++i) {
    const auto& row = fa_rows[i];
    const std::string where = std::string(kAttentionFile) + ": $.rows[" + std::to_string(i) + "]";
    if (field(row, "impl", where).get<std::string>() != "flashattention2") continue;
    if (field(row, "pass", where).get<std::string>() != "fwd+bwd") continue;
    const auto& rate = field(row, "tflops", where);
    if (rate.is_null()) continue;
    AttentionShape a;
    a.batch = field(row, "batch", where).get<std::int64_t>();
    a.seq = field(row, "seq_len", where).get<std::int64_t>();
    a.heads = field(row, "n_heads", where).get<std::int64_t>();
    a.kv_heads = a.heads;
    a.head_dim = field(row, "head_dim", where).get<std::int64_t>();
    a.causal = field(row, "causal", where).get<bool>();
    a.pass = AttentionPass::kForwardBackward;
    const double tflops = rate.get<double>();
    KernelDbEntry e;
    e.shape = a;
    e.median_s = shape_flops(e.shape) / (tflops * kTera);
    e.source = cited_as + "/" + kAttentionFile + " $.rows[" + std::to_string(i) +
               "]: " + field(row, "figure", where).get<std::string>() +
               ", FlashAttention-2 fwd+bwd, " + (a.causal ? "causal" : "non-causal") +
               ", head dim " + std::to_string(a.head_dim) + ", seq " + std::to_string(a.seq) +
               ", batch " + std::to_string(a.batch) + ", " + std::to_string(a.heads) +
               " heads: " + number(tflops) + " TFLOP/s";
    entries.push_back(std::move(e));
  }
}

}  // namespace

KernelDatabase build_published_database(const std::filesystem::path& refdata_dir,
                                        const std::string& cited_as) {
  std::vector<KernelDbEntry> entries;
  KernelDbMeta meta;
  meta.gpu_name = "NVIDIA H100 SXM5 80GB";
  meta.sm_count = 132;
  meta.l2_MiB = 50;

  add_gemm_entries(entries, meta, refdata_dir, cited_as);
  add_attention_entries(entries, refdata_dir, cited_as);

  meta.notes = {
      "Built by trainsim_published_db from " + cited_as +
          " only; no entry is a measurement of "
          "this project. Regenerate: build/kernels/trainsim_published_db --refdata " +
          cited_as + " --out platforms/h100-sxm/kernels-published.json",
      "gemm: the best measured matmul of each element type on H100 SXM, at the shape it was "
      "measured at; time = 2 m n k / rate. Used only for that exact shape.",
      "attention (pass fwd+bwd): FlashAttention-2 rows of the fwd+bwd figure; time = 3.5 x "
      "forward FLOPs (4 b s^2 h d, halved when causal) / rate. The simulator applies a row's rate "
      "to its forward and backward attention kernels alike, at any batch, heads and GQA ratio, "
      "interpolating the rate in log sequence length between rows; outside 512..16384 it uses "
      "the roofline."};
  return KernelDatabase(KernelDbKind::kPublished, std::move(meta), std::move(entries));
}

}  // namespace trainsim::kernels
