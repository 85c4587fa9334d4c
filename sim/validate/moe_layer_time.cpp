// Megatron-LM's MoE layer benchmark on one DGX H100 node (megatron_lm_moe_layer_perf_h100.json)
// against trainsim's price of the same layer: one MoELayer (router, token dispatch, grouped
// expert MLP, combine) of a Mixtral-like or DeepSeek-like proxy, forward plus backward per
// iteration. A component check of the MoE cost model: its kernels as the database times them
// and its all-to-alls on the node's NVLink, with no attention, pipeline or data parallelism.
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"
#include "sim/cost/pass_groups.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/platform/calibration.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/step_time.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

// The layer's proxy model: only the shapes its MoE MLP uses.
Model proxy_model(const Fields& f) {
  Model m;
  m.name = f.string("model_proxy").value_or("moe") + " proxy";
  m.hidden_size = f.required_integer("hidden_size", "an MoE layer row");
  m.num_layers = 1;
  m.num_attention_heads = f.required_integer("num_attention_heads", "an MoE layer row");
  m.num_kv_heads = m.num_attention_heads;
  m.head_dim = m.hidden_size / m.num_attention_heads;
  m.ffn_hidden_size = f.required_integer("moe_ffn_hidden_size", "an MoE layer row");
  m.vocab_size = 32000;
  m.moe.num_experts = f.required_integer("num_experts", "an MoE layer row");
  m.moe.experts_per_token = f.required_integer("router_topk", "an MoE layer row");
  m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  m.moe.shared_expert_ffn_hidden_size = f.integer("shared_expert_intermediate_size").value_or(0);
  return m;
}

std::string unexpressed(const Fields& f) {
  const auto dispatcher = f.string("token_dispatcher").value_or("alltoall");
  if (dispatcher != "alltoall" && dispatcher != "allgather") {
    return "DeepEP / HybridEP dispatch kernels (" + dispatcher + ") not modelled";
  }
  return "";
}

bool is_moe_kernel(const KernelCost& k) {
  for (const char* part : {".router", ".permute", ".expert_", ".unpermute", ".shared_"}) {
    if (k.name.find(part) != std::string::npos) return true;
  }
  return false;
}

// The MoE part of a decoder pass: its kernels, then its collectives one after another. With
// `raw`, compute-bound kernels as the database times them, without the calibration's factor for
// `gpus` GPUs (an FP8 GEMM's own).
double moe_seconds(const PassCost& pass, const PassGroups& groups, const Calibration* raw = nullptr,
                   std::int64_t gpus = 1) {
  double s = 0;
  for (const auto& k : pass.kernels) {
    if (!is_moe_kernel(k)) continue;
    const bool compute = k.kind == KernelKind::kGemm || k.kind == KernelKind::kAttention;
    const double factor =
        raw && compute ? compute_time_factor(*raw, gpus, is_fp8_gemm(k.shape)) : 1.0;
    s += k.time.seconds * static_cast<double>(k.count) / factor;
  }
  // TP 1 in every row: the expert-parallel calls are the layer's only ones.
  for (const auto& c : pass.collectives) {
    if (c.dim == Dim::kEP && groups.has(c.dim)) {
      s += groups.choose(c.dim, c.kind, c.bytes, c.count).seconds;
    }
  }
  return s;
}

ValidationRow moe_row(const nlohmann::json& j, const std::string& file, const std::string& path,
                      const Platform& platform) {
  const Fields f(j, file, path);
  ValidationRow row;
  row.name = f.string("case").value_or("?");
  row.half = "check";  // no calibration is fitted on these rows
  const auto fwd = f.number("forward_ms"), bwd = f.number("backward_ms");
  if (!fwd || !bwd) {
    row.skipped = "no forward or backward time";
    return row;
  }
  row.measured = (*fwd + *bwd) / 1e3;
  if (auto why = unexpressed(f); !why.empty()) {
    row.skipped = why;
    return row;
  }
  const Model model = proxy_model(f);
  Plan plan;
  plan.tp = f.required_integer("tp", "an MoE layer row");
  plan.ep = f.required_integer("ep", "an MoE layer row");
  plan.dp = f.required_integer("n_gpus", "an MoE layer row") / plan.tp;
  plan.sp = plan.tp > 1;
  plan.mbs = f.integer("micro_batch_size").value_or(1);
  plan.seq_len = f.required_integer("seq_length", "an MoE layer row");
  plan.precision =
      f.string("precision").value_or("bf16") == "fp8" ? Precision::kFP8 : Precision::kBF16;
  const std::string recipe = f.string("fp8_recipe").value_or("");
  if (plan.precision == Precision::kFP8 && recipe.starts_with("blockwise")) {
    plan.fp8_recipe = Fp8Recipe::kBlockwise;
  }
  if (f.string("token_dispatcher").value_or("alltoall") == "allgather") {
    plan.moe_dispatcher = MoeDispatcher::kAllGather;
  }
  const BlockCost cost = block_cost(model, platform, plan, BlockKind::kDecoder);
  const PassGroups groups(platform, plan);
  const double forward = moe_seconds(cost.forward, groups);
  const double backward = moe_seconds(cost.backward, groups);
  row.predicted = forward + backward;
  const Calibration& cal = platform.calibration;
  const auto gpus = plan.world_size();
  const double factor = compute_time_factor(cal, gpus);
  const double fp8_factor = compute_time_factor(cal, gpus, true);
  const double raw = moe_seconds(cost.forward, groups, &cal, gpus) +
                     moe_seconds(cost.backward, groups, &cal, gpus);
  std::ostringstream setup;
  setup << model.moe.num_experts << " experts top-" << model.moe.experts_per_token << " of "
        << model.ffn_hidden_size << ", h " << model.hidden_size << ", tp " << plan.tp << " ep "
        << plan.ep << ", seq " << plan.seq_len << ", " << to_string(plan.precision);
  row.setup = setup.str();
  std::ostringstream note;
  note.precision(3);
  note << "forward " << forward * 1e3 << " ms (measured " << *fwd << "), backward "
       << backward * 1e3 << " ms (measured " << *bwd << "); with the database's GEMM times "
       << "alone, without the end-to-end calibration's factor " << factor;
  if (plan.precision == Precision::kFP8) note << " (FP8 GEMMs " << fp8_factor << ")";
  note << " on them: " << raw * 1e3 << " ms (" << (raw - row.measured) / row.measured * 100
       << " %)";
  if (plan.fp8_recipe == Fp8Recipe::kBlockwise) {
    note << "; blockwise FP8 scaling, its GEMMs timed as per-tensor FP8 ones (the database has "
            "no block-scaled GEMM)";
  }
  row.note = note.str();
  return row;
}

}  // namespace

ValidationSet validate_moe_layer_time(const std::filesystem::path& reference,
                                      const Platform& platform) {
  const std::string file = reference.string();
  const nlohmann::json j = load_json_file(reference);
  const auto& rows =
      reference_rows(j, file, "not an MoE layer benchmark table (an object with a \"rows\" array)");
  ValidationSet set = step_time_set(
      reference, platform,
      "measured: forward + backward time of one Megatron-Core MoELayer (router, dispatch, "
      "grouped expert MLP, combine) per iteration on one DGX H100 node, in Megatron-LM's MoE "
      "performance test; predicted: the MoE kernels of trainsim's decoder pass as its kernel "
      "database times them, and its expert-parallel all-to-alls on the node's NVLink");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    set.rows.push_back(moe_row(rows[i], file, "$.rows[" + std::to_string(i) + "]", platform));
  }
  return set;
}

}  // namespace trainsim
