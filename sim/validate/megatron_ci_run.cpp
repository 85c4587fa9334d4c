#include "sim/validate/megatron_ci_run.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/validate/reference_fields.hpp"

namespace trainsim {

namespace {

// The arguments of model_config.yaml that the golden file leaves out, for one row.
struct ExtraArgs {
  bool present = false;
  std::optional<std::int64_t> vocab_size;
  std::string attention_backend = "auto";
  std::string position_embedding = "learned_absolute";
  bool disable_bias_linear = false;
  std::int64_t decoder_first = -1;
  std::int64_t decoder_last = -1;
  bool account_for_embedding = false;
  bool account_for_loss = false;
  std::int64_t virtual_stages = 1;
  std::int64_t microbatch_group = 0;      // interleaved: micro-batches per chunk group (0: pp)
  std::optional<std::string> unmodelled;  // an argument whose memory trainsim does not model
};

// One launch argument of a row: what it sets, or that trainsim does not model its memory; an
// argument neither modelled nor known to change no tensor is an error.
void apply_launch_arg(ExtraArgs& a, const Fields& args, const std::string& key) {
  // Arguments that change no tensor trainsim counts (scaling, fusion choices, data pipeline).
  static const std::vector<std::string> no_memory_effect = {
      "--rotary-interleaved",
      "--no-rope-fusion",
      "--fim-data",
      "--ddp-average-in-collective",
      "--no-create-attention-mask-in-dataloader",
      "--apply-query-key-layer-scaling",
      "--wgrad-deferral-limit",
      "--overlap-p2p-communication-warmup-flush",
      "--overlap-param-gather-with-optimizer-step",
      "--calculate-per-token-loss",
      "--decoupled-lr",
      "--check-weight-hash-across-dp-replicas-interval",
      "--disable-gloo-process-groups"};
  static const std::map<std::string, std::string> unmodelled = {
      {"--cross-entropy-loss-fusion", "fused cross-entropy (its buffers are not modelled)"},
      {"--defer-embedding-wgrad-compute", "deferred embedding weight gradients not modelled"},
      {"--qk-layernorm", "QK layernorm not modelled"},
      {"--multi-latent-attention", "multi-latent attention not modelled"},
      {"--num-distributed-optimizer-instances",
       "several distributed-optimizer instances not modelled"}};
  const char* k = key.c_str();
  if (key == "--attention-backend") {
    a.attention_backend = *args.string(k);
  } else if (key == "--position-embedding-type") {
    a.position_embedding = *args.string(k);
  } else if (key == "--disable-bias-linear") {
    a.disable_bias_linear = args.flag(k);
  } else if (key == "--decoder-first-pipeline-num-layers") {
    a.decoder_first = *args.integer(k);
  } else if (key == "--decoder-last-pipeline-num-layers") {
    a.decoder_last = *args.integer(k);
  } else if (key == "--account-for-embedding-in-pipeline-split") {
    a.account_for_embedding = args.flag(k);
  } else if (key == "--account-for-loss-in-pipeline-split") {
    a.account_for_loss = args.flag(k);
  } else if (key == "--num-virtual-stages-per-pipeline-rank") {
    a.virtual_stages = *args.integer(k);
  } else if (key == "--microbatch-group-size-per-virtual-pipeline-stage") {
    a.microbatch_group = *args.integer(k);
  } else if (auto it = unmodelled.find(key); it != unmodelled.end()) {
    if (!a.unmodelled) a.unmodelled = it->second;
  } else if (std::find(no_memory_effect.begin(), no_memory_effect.end(), key) ==
             no_memory_effect.end()) {
    args.fail(key, "unknown launch argument (trainsim neither models nor ignores it)");
  }
}

ExtraArgs read_extra_args(const nlohmann::json* supplement, const std::string& file,
                          const std::string& test_case) {
  ExtraArgs a;
  if (supplement == nullptr || !supplement->contains("rows")) return a;
  const auto& rows = supplement->at("rows");
  if (!rows.is_object()) fail_input(file + ": $.rows", "must be an object keyed by test case");
  if (!rows.contains(test_case)) return a;
  const std::string path = "$.rows." + test_case;
  const auto& entry = rows.at(test_case);
  if (!entry.is_object()) fail_input(file + ": " + path, "must be an object");
  a.present = true;
  const Fields f(entry, file, path);
  a.vocab_size = f.integer("vocab_size");
  if (!entry.contains("args") || !entry.at("args").is_object()) {
    fail_input(file + ": " + path + ".args", "must be an object of launch arguments");
  }
  const Fields args(entry.at("args"), file, path + ".args");
  for (const auto& [key, value] : entry.at("args").items()) apply_launch_arg(a, args, key);
  return a;
}

std::string family_skip(const std::string& family, const std::string& test_case) {
  if (family == "bert") return "BERT (encoder with a binary head), not a decoder-only GPT";
  if (family == "t5") return "T5 (encoder-decoder), not a decoder-only GPT";
  if (family.rfind("multimodal", 0) == 0 || family == "mimo") {
    return "multimodal model (vision encoder)";
  }
  if (family == "hybrid") return "hybrid Mamba model";
  if (family == "moe" || family == "mixtral") {
    return "mixture of experts (expert parallelism not modelled)";
  }
  if (family != "gpt") return "model family \"" + family + "\" not modelled";
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
  if (f.integer("num_experts").value_or(0) > 0 || f.integer("ep").value_or(1) > 1) {
    return "mixture of experts (expert parallelism not modelled)";
  }
  if (f.integer("cp").value_or(1) > 1) return "context parallelism not modelled";
  if (f.flag("megatron_fsdp")) return "Megatron FSDP not modelled";
  if (f.has("fp8_format")) return "FP8 training (Transformer Engine's FP8 copies) not modelled";
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

// The row's GPT as Megatron-LM builds it from its arguments.
Model ci_model(const Fields& f, const ExtraArgs& extra, const std::string& name,
               const std::string& file) {
  Model m;
  m.name = name;
  m.source = file;
  m.num_layers = required(f, "num_layers");
  m.hidden_size = required(f, "hidden_size");
  m.num_attention_heads = required(f, "num_attention_heads");
  m.num_kv_heads = f.flag("gqa") ? required(f, "num_query_groups") : m.num_attention_heads;
  m.head_dim = m.hidden_size / m.num_attention_heads;
  const bool swiglu = f.flag("swiglu");
  m.ffn_kind = swiglu ? FfnKind::kSwiGLU : FfnKind::kGelu;
  // Megatron-LM's default MLP width: 4h, or for SwiGLU 8h/3 rounded down to a multiple of 64.
  m.ffn_hidden_size =
      f.integer("ffn_hidden_size")
          .value_or(swiglu ? (4 * m.hidden_size * 2 / 3) / 64 * 64 : 4 * m.hidden_size);
  const auto vocab = f.integer("vocab_size") ? f.integer("vocab_size") : extra.vocab_size;
  if (!vocab) f.fail("vocab_size", "unknown: neither the row nor the launch arguments give it");
  m.vocab_size = *vocab;
  m.tied_embeddings = !f.flag("untie_embeddings");
  if (extra.position_embedding == "rope") {
    m.position_embedding = PositionEmbedding::kRope;
  } else if (extra.position_embedding == "none") {
    m.position_embedding = PositionEmbedding::kNone;
  } else {
    m.position_embedding = PositionEmbedding::kLearned;
    m.max_position_embeddings = required(f, "seq_length");
  }
  m.norm = NormKind::kLayerNorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = !extra.disable_bias_linear;
  return m;
}

// The row's plan on `gpus` GPUs.
Plan ci_plan(const Fields& f, const ExtraArgs& extra, const Model& m, std::int64_t gpus) {
  Plan plan;
  plan.tp = required(f, "tp");
  plan.pp = required(f, "pp");
  plan.dp = gpus / (plan.tp * plan.pp);
  plan.mbs = required(f, "micro_batch_size");
  plan.gbs = f.integer("global_batch_size").value_or(0);
  plan.seq_len = required(f, "seq_length");
  plan.sp = f.flag("sequence_parallel");
  plan.zero = f.flag("distributed_optimizer") ? 1 : 0;
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
  return plan;
}

// The run in a few words.
std::string ci_setup(const Model& m, const Plan& plan, const ExtraArgs& extra,
                     const ActivationOptions& options, bool local) {
  std::ostringstream setup;
  setup << m.num_layers << " x " << m.hidden_size << " (" << m.num_attention_heads << "/"
        << m.num_kv_heads << " heads), tp " << plan.tp << " pp " << plan.pp << " dp " << plan.dp
        << ", mbs " << plan.mbs << " x " << plan.seq_len;
  if (plan.zero > 0) setup << ", dist-opt";
  if (plan.recompute != Recompute::kNone)
    setup << ", " << to_string(plan.recompute) << " recompute";
  if (plan.sp) setup << ", sp";
  if (plan.vp > 1) {
    setup << ", vp " << plan.vp;
    if (plan.microbatch_group_size_per_vp_stage > 0) {
      setup << " (groups of " << plan.microbatch_group_size_per_vp_stage << ")";
    }
  }
  if (!options.flash_attention) setup << ", unfused attn";
  if (m.ffn_kind == FfnKind::kSwiGLU) setup << ", swiglu";
  if (!m.tied_embeddings) setup << ", untied";
  if (m.position_embedding == PositionEmbedding::kRope) setup << ", rope";
  if (extra.disable_bias_linear) setup << ", no bias";
  if (extra.decoder_first >= 0 || extra.decoder_last >= 0) {
    setup << ", first/last stage " << extra.decoder_first << "/" << extra.decoder_last << " layers";
  }
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
  const ExtraArgs extra =
      read_extra_args(ref.supplement ? &*ref.supplement : nullptr, ref.supplement_file, run.name);
  if (!extra.present || extra.unmodelled) {
    run.skipped =
        extra.unmodelled.value_or("launch arguments beyond the golden file's subset not collected");
    return run;
  }
  if (unmodelled_recompute(f)) {
    run.skipped = "full recomputation other than uniform over single layers not modelled";
    return run;
  }
  run.gpus = f.integer("n_gpus");
  run.model = ci_model(f, extra, run.name, ref.file);
  run.plan = ci_plan(f, extra, run.model, run.gpus.value_or(8));
  // Megatron-LM's defaults: dropout 0.1 on attention probabilities and hidden states.
  run.options.hidden_dropout = true;
  run.options.attention_dropout = true;
  run.options.flash_attention = run.plan.attention_backend != AttentionBackend::kUnfused;
  const bool local = f.string("transformer_impl").value_or("transformer_engine") == "local";
  run.setup = ci_setup(run.model, run.plan, extra, run.options, local);
  return run;
}

}  // namespace trainsim
