// The Megatron-LM arguments that set a plan field together with others, each family as
// Megatron-LM's validate_args and Megatron-Core's configs read it.
#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/plan/megatron_arg_table.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

namespace {

constexpr const char* kFp32 = "fp32";

}  // namespace

// Virtual pipeline stages by any of Megatron-LM's four arguments (the interleaved schedule
// where there are 2 or more), the pipeline exchanges on the compute stream, the rank order.
void MegatronReader::pipeline() {
  const std::int64_t pp = integer_or("--pipeline-model-parallel-size", 1);
  // validate_args: no more than one of the three that set the virtual stages now.
  std::string from;
  for (const char* arg :
       {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
        "--pipeline-model-parallel-layout"}) {
    if (!has(arg)) continue;
    if (!from.empty()) fail(arg, "is given with " + from + ": give one (Megatron-LM's rule)");
    from = arg;
  }
  std::int64_t vp = 1;
  if (from == "--num-virtual-stages-per-pipeline-rank") vp = integer(from);
  if (from == "--num-layers-per-virtual-pipeline-stage") {
    const std::int64_t per_chunk = integer(from);
    // validate_args: the layers of a pipeline stage over the layers of a virtual stage.
    if (pp < 1 || per_chunk < 1 || model.num_layers % pp != 0 ||
        (model.num_layers / pp) % per_chunk != 0) {
      fail(from, "must divide the " + std::to_string(model.num_layers) + " layers of " +
                     model.name + " over pp " + std::to_string(pp) + " into whole virtual stages");
    }
    vp = model.num_layers / pp / per_chunk;
  }
  if (from == "--pipeline-model-parallel-layout") {
    // validate_args: the layout's stages over pp give the virtual stages.
    const std::int64_t stages = megatron_layout_stage_count(one(from), where + " " + from);
    if (pp < 1 || stages % pp != 0) {
      fail(from,
           "has " + std::to_string(stages) + " stages, not a multiple of pp " + std::to_string(pp));
    }
    vp = stages / pp;
  }
  // The older argument; TransformerConfig asserts it agrees with a layout's.
  if (const std::string arg = "--virtual-pipeline-model-parallel-size"; has(arg)) {
    if (!from.empty() && integer(arg) != vp) {
      fail(arg,
           "is " + std::to_string(integer(arg)) + " but " + from + " gives " + std::to_string(vp));
    }
    if (from.empty()) vp = integer(from = arg);
  }
  if (vp < 1) fail(from, "must be at least 1, got " + std::to_string(vp));
  if (vp > 1) {
    set("vp", std::to_string(vp), from);
    set("schedule", "interleaved", from);
  }
  if (has("--no-overlap-p2p-communication")) {
    if (vp > 1) {
      set("overlap_p2p_comm", "false", "--no-overlap-p2p-communication");
    } else {
      out.unread.push_back("--no-overlap-p2p-communication");  // the interleaved schedule's only
    }
  }
  if (has("--use-tp-pp-dp-mapping")) set("rank_order", "tp-cp-ep-pp-dp", "--use-tp-pp-dp-mapping");
}

// Megatron-LM trains in FP32 unless --bf16 or --fp16; FP8 GEMMs by --fp8-format, scaled by
// --fp8-recipe (default delayed, as trainsim's).
void MegatronReader::precision() {
  if (has("--fp16")) {
    fail("--fp16", "FP16 training with loss scaling is not modelled: trainsim prices BF16 and FP8");
  }
  for (const char* arg : {"--fp4-format", "--fp4-recipe", "--fp4-param-gather"}) {
    if (has(arg)) fail(arg, "FP4 training is not modelled: trainsim prices BF16 and FP8");
  }
  if (!has("--bf16")) {
    fail_input(where,
               "has no --bf16: without it (or --fp16) Megatron-LM trains in FP32, which "
               "trainsim does not price; add --bf16");
  }
  if (!has("--fp8-format")) {
    set("precision", "bf16", "--bf16");
    if (has("--fp8-recipe")) out.unread.push_back("--fp8-recipe");  // without FP8, unused
    return;
  }
  const std::string& format = one("--fp8-format");
  if (format != "e4m3" && format != "hybrid") {
    fail("--fp8-format", "must be e4m3 or hybrid, got '" + format + "'");
  }
  set("precision", "fp8", "--fp8-format");
  if (has("--fp8-recipe")) {
    if (one("--fp8-recipe") == "custom") {
      fail("--fp8-recipe", "custom quantization recipes are not modelled");
    }
    set("fp8_recipe", one("--fp8-recipe"), "--fp8-recipe");
  }
}

// Selective recomputation of the listed modules, or full: every layer's forward (uniform over
// groups of N layers, one input kept per group), or block over the first N layers of each
// virtual stage.
void MegatronReader::recompute() {
  std::string granularity;
  std::string from;
  if (has("--recompute-granularity")) granularity = one(from = "--recompute-granularity");
  // validate_args: --recompute-activations sets selective, over any granularity given.
  if (has("--recompute-activations")) granularity = "selective", from = "--recompute-activations";
  if (granularity.empty()) {
    if (has("--recompute-modules")) out.unread.push_back("--recompute-modules");
    return;
  }
  if (granularity == "selective") {
    if (has("--recompute-method")) {
      fail("--recompute-method", "applies to full recomputation only (Megatron-LM's rule)");
    }
    set("recompute", "selective", from);
    if (has("--recompute-modules")) {
      std::string modules;
      for (const auto& m : given.at("--recompute-modules"))
        modules += (modules.empty() ? "" : ",") + m;
      set("recompute_modules", modules, "--recompute-modules");
    }
    return;
  }
  if (granularity != "full") fail(from, "must be full or selective, got '" + granularity + "'");
  if (!has("--recompute-method") || !has("--recompute-num-layers")) {
    fail(from, "full needs --recompute-method and --recompute-num-layers (Megatron-LM's rule)");
  }
  const std::string& method = one("--recompute-method");
  if (method != "uniform" && method != "block") {
    fail("--recompute-method", "must be uniform or block, got '" + method + "'");
  }
  const std::int64_t n = integer("--recompute-num-layers");
  // block: the first n layers of every model chunk (a virtual stage's layers).
  const std::int64_t pp = integer_or("--pipeline-model-parallel-size", 1);
  const std::int64_t vp = out.fields.contains("vp") ? std::stoll(out.fields.at("vp")) : 1;
  const std::int64_t per_chunk = model.num_layers / std::max<std::int64_t>(1, pp) / vp;
  set("recompute", "full", "--recompute-granularity");
  if (method == "block" && n < per_chunk) {
    set("recompute_num_layers", std::to_string(n), "--recompute-num-layers");
  }
  // uniform: groups of n layers, one input kept per group (n = 1: every layer's, the default).
  if (method == "uniform" && n > 1) {
    set("recompute_method", "uniform", "--recompute-method");
    set("recompute_num_layers", std::to_string(n), "--recompute-num-layers");
  }
}

// The distributed optimizer (ZeRO 1), and Megatron-Core's precision-aware optimizer with BF16
// moments; other dtypes are not modelled.
void MegatronReader::optimizer() {
  if (has("--use-distributed-optimizer")) set("zero", "1", "--use-distributed-optimizer");
  const auto dtype = [&](const char* arg) { return has(arg) ? one(arg) : std::string(kFp32); };
  const std::string avg = dtype("--exp-avg-dtype");
  const std::string avg_sq = dtype("--exp-avg-sq-dtype");
  for (const char* arg : {"--main-params-dtype", "--main-grads-dtype"}) {
    if (dtype(arg) != kFp32) fail(arg, "only fp32 is modelled, got '" + one(arg) + "'");
  }
  if (!has("--use-precision-aware-optimizer")) {
    for (const char* arg : {"--exp-avg-dtype", "--exp-avg-sq-dtype"}) {
      if (dtype(arg) != kFp32) fail(arg, "needs --use-precision-aware-optimizer (Megatron-LM)");
    }
    return;
  }
  if (avg == "bf16" && avg_sq == "bf16") {
    set("optimizer_state", "bf16-moments", "--use-precision-aware-optimizer");
  } else if (avg != kFp32 || avg_sq != kFp32) {
    fail(avg != kFp32 ? "--exp-avg-dtype" : "--exp-avg-sq-dtype",
         "moments in " + avg + " and " + avg_sq + " are not modelled: bf16 bf16 or fp32 fp32");
  }
}

// Transformer Engine's attention backends as trainsim names them, one CP kind for every layer,
// hierarchical CP's all-to-all level.
void MegatronReader::attention_and_context() {
  if (has("--attention-backend")) {
    const std::string& b = one("--attention-backend");
    // auto and fused: cuDNN's fused attention; flash: the flash-attn package (NVTE_FUSED_ATTN=0);
    // unfused and local: QK^T and PV as GEMMs around a softmax.
    const std::string kind = b == "auto" || b == "fused"      ? "flash"
                             : b == "flash"                   ? "flash-attn2"
                             : b == "unfused" || b == "local" ? "unfused"
                                                              : "";
    if (kind.empty()) fail("--attention-backend", "must be auto, fused, flash, unfused or local");
    set("attention_backend", kind, "--attention-backend");
  }
  if (has("--cp-comm-type")) {
    const auto& kinds = given.at("--cp-comm-type");
    if (std::any_of(kinds.begin(), kinds.end(), [&](const auto& k) { return k != kinds[0]; })) {
      fail("--cp-comm-type", "a kind per layer is not modelled: give one for every layer");
    }
    set("cp_comm_type", kinds[0] == "all_gather" ? "allgather" : kinds[0], "--cp-comm-type");
  }
  if (has("--hierarchical-context-parallel-sizes")) {
    const auto& sizes = given.at("--hierarchical-context-parallel-sizes");
    if (sizes.size() != 2) {
      fail("--hierarchical-context-parallel-sizes",
           "takes two sizes, the all-to-all level's and the ring's");
    }
    set("cp_a2a_size", sizes[0], "--hierarchical-context-parallel-sizes");
  }
  if (has("--cross-entropy-fusion-impl") && one("--cross-entropy-fusion-impl") != "native") {
    out.unread.push_back("--cross-entropy-fusion-impl");  // priced as the native kernel
  }
}

void MegatronReader::experts() {
  if (!has("--moe-token-dispatcher-type")) return;
  const std::string& kind = one("--moe-token-dispatcher-type");
  if (kind == "flex") {
    fail("--moe-token-dispatcher-type",
         "flex (DeepEP, HybridEP) is not modelled: trainsim prices alltoall and allgather");
  }
  set("moe_token_dispatcher_type", kind, "--moe-token-dispatcher-type");
}

// Where Megatron-LM's defaults are not trainsim's (which follow the published recipes).
void MegatronReader::defaults() {
  by_default("hidden_dropout", "0.1");
  by_default("attention_dropout", "0.1");
  if (model.moe.is_moe()) {
    by_default("moe_token_dispatcher_type", "allgather");
    by_default("moe_grouped_gemm", "false");
  }
}

}  // namespace trainsim
