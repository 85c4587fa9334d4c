#include "sim/validate/megatron_ci_run.hpp"

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/plan/megatron_args.hpp"
#include "sim/validate/megatron_ci_args.hpp"
#include "sim/validate/reference_fields.hpp"

namespace trainsim {

namespace {

std::string family_skip(const std::string& family, const std::string& test_case) {
  if (family == "bert") return "BERT (encoder with a binary head), not a decoder-only GPT";
  if (family == "t5") return "T5 (encoder-decoder), not a decoder-only GPT";
  if (family.rfind("multimodal", 0) == 0 || family == "mimo") {
    return "multimodal model (vision encoder)";
  }
  if (family == "hybrid") return "hybrid Mamba model";
  if (family != "gpt" && family != "moe" && family != "mixtral") {
    return "model family \"" + family + "\" not modelled";
  }
  if (test_case.rfind("gpt_grpo", 0) == 0) {
    return "reinforcement-learning run (GRPO): generation memory not modelled";
  }
  return "";
}

// Why a row cannot be expressed, known before its launch arguments are read; or empty.
std::string unexpressed(const Fields& f, const std::string& name) {
  if (auto why = family_skip(f.string("model_family_dir").value_or(""), name); !why.empty()) {
    return why;
  }
  if (f.flag("megatron_fsdp")) return "Megatron FSDP not modelled";
  if (const auto format = f.string("fp8_format"); format && *format != "hybrid") {
    return "FP8 format " + *format + " not modelled (E4M3 forward, E5M2 gradients only)";
  }
  if (f.flag("fp16")) return "fp16 mixed precision not modelled (BF16 only)";
  if (!f.integer("n_gpus") && f.flag("distributed_optimizer")) {
    return "GPU count unknown, and the distributed optimizer's shard depends on it";
  }
  return "";
}

bool unmodelled_recompute(const Fields& f) {
  return f.string("recompute_granularity").value_or("") == "full" &&
         (f.string("recompute_method").value_or("uniform") != "uniform" ||
          f.integer("recompute_num_layers").value_or(1) != 1);
}

std::int64_t required(const Fields& f, const char* key) {
  return f.required_integer(key, "a GPT row");
}

// The row's GPT as Megatron-LM builds it from its arguments: the golden row's shape and the
// supplement's, given to the reader of Megatron-LM's model arguments (sim/plan/megatron_model),
// with the vocabulary the row records.
Model ci_model(const Fields& f, const CiLaunchArgs& extra, const std::string& name,
               const std::string& file) {
  std::map<std::string, std::vector<std::string>> args;
  const auto value = [&](const char* arg, std::optional<std::int64_t> v) {
    if (v) args[arg] = {std::to_string(*v)};
  };
  const auto text = [&](const char* arg, const std::string& v) { args[arg] = {v}; };
  const auto flag = [&](const char* arg, bool on) {
    if (on) args[arg] = {};
  };
  value("--num-layers", required(f, "num_layers"));
  value("--hidden-size", required(f, "hidden_size"));
  value("--num-attention-heads", required(f, "num_attention_heads"));
  flag("--group-query-attention", f.flag("gqa"));
  if (f.flag("gqa")) value("--num-query-groups", required(f, "num_query_groups"));
  flag("--swiglu", f.flag("swiglu"));
  value("--ffn-hidden-size", f.integer("ffn_hidden_size"));
  flag("--untie-embeddings-and-output-weights", f.flag("untie_embeddings"));
  text("--position-embedding-type", extra.position_embedding);
  // Learned positions as long as the sequence (the configs set --max-position-embeddings so).
  if (extra.position_embedding == "learned_absolute") {
    value("--max-position-embeddings", required(f, "seq_length"));
  }
  text("--normalization", extra.normalization);
  flag("--disable-bias-linear", extra.disable_bias_linear);
  flag("--qk-layernorm", extra.qk_layernorm);
  if (extra.multi_latent_attention) {
    flag("--multi-latent-attention", true);
    if (extra.q_lora_rank > 0) value("--q-lora-rank", extra.q_lora_rank);
    value("--kv-lora-rank", extra.kv_lora_rank);
    value("--qk-head-dim", extra.qk_head_dim);
    value("--qk-pos-emb-head-dim", extra.qk_pos_emb_head_dim);
    value("--v-head-dim", extra.v_head_dim);
  }
  value("--num-experts", f.integer("num_experts"));
  value("--moe-router-topk", f.integer("moe_router_topk"));
  value("--moe-ffn-hidden-size", f.integer("moe_ffn_hidden_size"));
  if (extra.shared_expert_ffn_hidden_size > 0) {
    value("--moe-shared-expert-intermediate-size", extra.shared_expert_ffn_hidden_size);
  }
  const auto vocab = f.integer("vocab_size") ? f.integer("vocab_size") : extra.vocab_size;
  if (!vocab) f.fail("vocab_size", "unknown: neither the row nor the launch arguments give it");
  Model m = model_from_megatron_args(args, name, file + ": $.rows[" + name + "]", vocab);
  m.source = file;
  return m;
}

// The expert layout and token dispatch of an MoE row (Megatron-Core's defaults where the config
// is silent: expert tensor parallelism as tp, the allgather dispatcher, sequential experts; the
// flex dispatcher skips the row before this).
void set_moe_plan(const Fields& f, const CiLaunchArgs& extra, Plan& plan) {
  plan.ep = f.integer("ep").value_or(1);
  plan.etp = f.integer("etp").value_or(0);
  plan.moe_dispatcher =
      extra.moe_dispatcher == "alltoall" ? MoeDispatcher::kAllToAll : MoeDispatcher::kAllGather;
  plan.moe_grouped_gemm = extra.moe_grouped_gemm;
  plan.moe_a2a_overlap = extra.moe_a2a_overlap;
}

// The row's plan on `gpus` GPUs.
Plan ci_plan(const Fields& f, const CiLaunchArgs& extra, const Model& m, std::int64_t gpus) {
  Plan plan;
  plan.tp = f.integer("tp").value_or(1);  // Megatron-LM's default where absent
  plan.pp = f.integer("pp").value_or(1);
  plan.cp = f.integer("cp").value_or(1);
  plan.dp = gpus / (plan.tp * plan.pp * plan.cp);
  if (m.moe.is_moe()) set_moe_plan(f, extra, plan);
  if (f.has("fp8_format")) plan.precision = Precision::kFP8;
  if (plan.precision == Precision::kFP8 && extra.fp8_recipe == "tensorwise") {
    plan.fp8_recipe = Fp8Recipe::kTensorwise;
  }
  plan.fp8_param_gather = extra.fp8_param_gather;
  if (extra.tp_pp_dp_mapping) {
    plan.rank_order = {Dim::kTP, Dim::kCP, Dim::kEP, Dim::kPP, Dim::kDP};
  }
  plan.mbs = required(f, "micro_batch_size");
  plan.gbs = f.integer("global_batch_size").value_or(0);
  plan.seq_len = required(f, "seq_length");
  // Megatron-LM turns sequence parallelism off at tensor-parallel size 1.
  plan.sp = f.flag("sequence_parallel") && plan.tp > 1;
  plan.zero = f.flag("distributed_optimizer") ? 1 : 0;
  plan.num_distributed_optimizer_instances = extra.optimizer_instances;
  const std::string granularity = f.string("recompute_granularity").value_or("");
  plan.recompute = granularity == "full"        ? Recompute::kFull
                   : granularity == "selective" ? Recompute::kSelective
                                                : Recompute::kNone;
  plan.schedule = ScheduleKind::k1F1B;
  // The local implementation and --attention-backend unfused materialise the s x s scores.
  const bool local = f.string("transformer_impl").value_or("transformer_engine") == "local";
  if (local || extra.attention_backend == "unfused") {
    plan.attention_backend = AttentionBackend::kUnfused;
  }
  plan.overlap_grad_reduce = f.flag("overlap_grad_reduce");
  plan.overlap_param_gather = f.flag("overlap_param_gather");
  plan.tp_comm_overlap = f.flag("tp_comm_overlap");
  // Interleaving: --num-layers-per-virtual-pipeline-stage L gives layers / (pp x L) chunks per
  // stage, --num-virtual-stages-per-pipeline-rank the chunks directly.
  plan.vp = extra.virtual_stages;
  if (const auto per_chunk = f.integer("num_layers_per_virtual_pipeline_stage")) {
    if (*per_chunk <= 0 || m.num_layers % (plan.pp * *per_chunk) != 0) {
      f.fail("num_layers_per_virtual_pipeline_stage",
             "must divide num_layers / pp (Megatron-LM asserts it)");
    }
    plan.vp = m.num_layers / (plan.pp * *per_chunk);
  }
  if (plan.vp > 1) {
    plan.schedule = ScheduleKind::kInterleaved;
    plan.microbatch_group_size_per_vp_stage = extra.microbatch_group;
  }
  plan.decoder_first_pipeline_num_layers = extra.decoder_first;
  plan.decoder_last_pipeline_num_layers = extra.decoder_last;
  plan.account_for_embedding_in_pipeline_split = extra.account_for_embedding;
  plan.account_for_loss_in_pipeline_split = extra.account_for_loss;
  plan.defer_embedding_wgrad_compute = extra.defer_embedding_wgrad;
  plan.wgrad_deferral_limit = extra.wgrad_deferral_limit;
  plan.attention_dropout = extra.attention_dropout;
  plan.hidden_dropout = extra.hidden_dropout;
  plan.cross_entropy_loss_fusion = extra.cross_entropy_loss_fusion;
  return plan;
}

// The run in a few words.
std::string ci_setup(const Model& m, const Plan& plan, const CiLaunchArgs& extra, bool local) {
  std::ostringstream setup;
  setup << m.num_layers << " x " << m.hidden_size << " (" << m.num_attention_heads << "/"
        << m.num_kv_heads << " heads)";
  if (m.moe.is_moe()) {
    setup << ", " << m.moe.num_experts << " experts top-" << m.moe.experts_per_token;
    const bool own_width = m.moe.expert_ffn_hidden_size != m.ffn_hidden_size;
    const auto shared = m.moe.shared_expert_ffn_hidden_size;
    if (own_width) setup << " of width " << m.moe.expert_ffn_hidden_size;
    if (shared > 0) setup << (own_width ? " and" : "") << " a shared expert of " << shared;
  }
  setup << ", tp " << plan.tp << " pp " << plan.pp;
  if (plan.cp > 1) setup << " cp " << plan.cp;
  if (plan.ep > 1) setup << " ep " << plan.ep;
  if (m.moe.is_moe() && plan.expert_tp() != plan.tp) setup << " etp " << plan.expert_tp();
  setup << " dp " << plan.dp << ", mbs " << plan.mbs << " x " << plan.seq_len;
  if (plan.precision == Precision::kFP8) setup << ", fp8";
  if (plan.fp8_recipe != Fp8Recipe::kDelayed) setup << " (" << to_string(plan.fp8_recipe) << ")";
  if (plan.zero > 0) setup << ", dist-opt";
  if (plan.num_distributed_optimizer_instances > 1) {
    setup << " x " << plan.num_distributed_optimizer_instances << " instances";
  }
  if (plan.recompute != Recompute::kNone)
    setup << ", " << to_string(plan.recompute) << " recompute";
  if (plan.sp) setup << ", sp";
  if (plan.vp > 1) {
    setup << ", vp " << plan.vp;
    if (plan.microbatch_group_size_per_vp_stage > 0) {
      setup << " (groups of " << plan.microbatch_group_size_per_vp_stage << ")";
    }
  }
  if (plan.attention_backend == AttentionBackend::kUnfused) setup << ", unfused attn";
  if (plan.cross_entropy_loss_fusion) setup << ", fused CE";
  if (m.mla.is_mla()) setup << ", mla";
  if (m.qk_norm) setup << ", qk norm";
  if (m.ffn_kind == FfnKind::kSwiGLU) setup << ", swiglu";
  if (!m.tied_embeddings) setup << ", untied";
  if (m.position_embedding == PositionEmbedding::kRope) setup << ", rope";
  if (extra.disable_bias_linear) setup << ", no bias";
  if (extra.decoder_first >= 0 || extra.decoder_last >= 0) {
    setup << ", first/last stage " << extra.decoder_first << "/" << extra.decoder_last << " layers";
  }
  if (plan.hidden_dropout == 0 && plan.attention_dropout == 0) setup << ", no dropout";
  if (local) setup << ", local impl";
  return setup.str();
}

}  // namespace

const nlohmann::json& CiReference::rows() const {
  return reference_rows(golden, file,
                        "not a reference set trainsim can validate against (known: Megatron-LM CI "
                        "golden values, megatron_lm_ci_golden_values_*.json)");
}

CiReference load_ci_reference(const std::filesystem::path& reference) {
  CiReference ref;
  ref.file = reference.string();
  ref.golden = load_json_file(reference);
  ref.rows();
  // The launch arguments the golden file leaves out live beside it.
  std::filesystem::path supplement = reference;
  std::string stem = reference.filename().string();
  stem.replace(stem.find("golden_values"), std::string("golden_values").size(), "model_args");
  supplement.replace_filename(stem);
  ref.supplement_file = supplement.string();
  std::error_code ec;
  if (std::filesystem::is_regular_file(supplement, ec)) ref.supplement = load_json_file(supplement);
  return ref;
}

CiRun read_ci_run(const CiReference& ref, const nlohmann::json& row, const std::string& path) {
  const Fields f(row, ref.file, path);
  CiRun run;
  const auto name = f.string("test_case");
  if (!name) f.fail("test_case", "is required (a string)");
  run.name = *name;
  if (auto why = unexpressed(f, run.name); !why.empty()) {
    run.skipped = why;
    return run;
  }
  const CiLaunchArgs extra = read_ci_launch_args(ref.supplement ? &*ref.supplement : nullptr,
                                                 ref.supplement_file, run.name);
  if (!extra.present || extra.unmodelled) {
    run.skipped =
        extra.unmodelled.value_or("launch arguments beyond the golden file's subset not collected");
    return run;
  }
  if (f.has("fp8_format") && extra.fp8_recipe != "delayed" && extra.fp8_recipe != "tensorwise") {
    run.skipped = "FP8 recipe " + extra.fp8_recipe + " not modelled (delayed and tensorwise only)";
    return run;
  }
  if (unmodelled_recompute(f)) {
    run.skipped = "full recomputation other than uniform over single layers not modelled";
    return run;
  }
  run.gpus = f.integer("n_gpus");
  run.model = ci_model(f, extra, run.name, ref.file);
  run.plan = ci_plan(f, extra, run.model, run.gpus.value_or(8));
  const bool local = f.string("transformer_impl").value_or("transformer_engine") == "local";
  run.setup = ci_setup(run.model, run.plan, extra, local);
  return run;
}

}  // namespace trainsim
