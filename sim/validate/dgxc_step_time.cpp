// NVIDIA's DGX Cloud benchmark recipes on DGX H100 (nvidia_dgxc_benchmarking_h100.json) against
// trainsim's step time: every pre-training and fine-tuning (SFT, LoRA) row of a Megatron (NeMo)
// recipe whose model is in the catalog and whose parallelism trainsim expresses. The tables give
// the layout, batch, sequence and precision; the rest is the NeMo recipes' defaults (stated in the
// set's metric).
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/validate/parallel_rows.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/step_time.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

// The catalog entry of a row's model, or empty.
std::string catalog_model(const std::string& row_model) {
  if (row_model == "Nemotron4 15B") return "nemotron4-15b";
  if (row_model == "Nemotron4 340B") return "nemotron4-340b";
  if (row_model == "Llama3 8B") return "llama3-8b";
  if (row_model == "Llama3.1 8B") return "llama3.1-8b";
  // Llama 3 70B has Llama 3.1 70B's layers and vocabulary; only the RoPE scaling differs.
  if (row_model == "Llama3 70B") return "llama3.1-70b";
  if (row_model == "Grok-1 314B (MoE)") return "grok-1";
  if (row_model == "DeepSeek-V3 671B (MoE)") return "deepseek-v3";
  if (row_model == "Llama4 Maverick 400B (MoE)") return "llama4-maverick";
  return "";
}

// The virtual pipeline size a row's benchmark ran where its table says NA, or 0 where not known:
// v25.04.02's nemotron/launch.sh passes -vp 12 to every Nemotron-4 340B run (its README's table
// leaves the column NA), as NeMo's recommended H100 configuration at the commit its setup.sh pins
// (d2b2155, scripts/performance/recommended_model_configs/model_configs_h100.csv) also sets.
std::int64_t launcher_vp(const std::string& model, const std::string& tag) {
  return model == "Nemotron4 340B" && tag == "v25.04.02" ? 12 : 0;
}

std::string unexpressed(const Fields& f, const std::string& model, const std::string& tag) {
  const std::string task = f.string("task").value_or("pretrain");
  if (task != "pretrain" && task != "finetune_SFT" && task != "finetune_LoRA") {
    return "fine-tuning other than SFT and LoRA";
  }
  if (model.find("JAX") != std::string::npos) {
    return "JAX framework (MaxText, PaxML): not a Megatron recipe";
  }
  if (model.find("Mamba") != std::string::npos) return "hybrid Mamba model";
  if (catalog_model(model).empty()) return "model not in the catalog";
  for (const auto& flag : f.strings("flags")) {
    // A proxy with its layer count given is that smaller model, measured; without it, unknown.
    if (flag.rfind("PROXY", 0) == 0 && !f.integer("num_layers")) {
      return "proxy configuration with fewer layers, its layer count not given";
    }
  }
  // A MoE recipe's VP without PP is no schedule Megatron runs; its table leaves VP off for PP.
  const bool moe = model.find("MoE") != std::string::npos;
  if (f.integer("pp").value_or(1) > 1 && !f.integer("vp") && !moe && !launcher_vp(model, tag)) {
    return "pipeline-parallel row without its virtual pipeline size (the table says NA)";
  }
  return "";
}

Plan dgxc_plan(const Fields& f) {
  auto required = [&f](const char* key) { return f.required_integer(key, "a recipe row"); };
  Plan p;
  p.tp = required("tp");
  p.pp = required("pp");
  p.vp = f.integer("vp").value_or(1);
  p.cp = f.integer("cp").value_or(1);
  p.dp = required("n_gpus") / (p.tp * p.pp * p.cp);
  p.mbs = required("mbs");
  p.gbs = required("gbs");
  p.seq_len = required("seq_len");
  const auto precision = f.string("precision").value_or("BF16");
  if (precision != "BF16" && precision != "FP8") f.fail("precision", "must be BF16 or FP8");
  p.precision = precision == "FP8" ? Precision::kFP8 : Precision::kBF16;
  if (p.pp == 1) p.vp = 1;  // a VP column on a row without pipeline stages has no effect
  if (p.vp > 1) p.schedule = ScheduleKind::kInterleaved;
  // Expert parallelism: the EP column; expert TP the ETP column, or TP where it is empty
  // (Megatron's default, expert_tensor_parallel_size = tensor_model_parallel_size).
  p.ep = f.integer("ep").value_or(1);
  p.etp = f.integer("etp").value_or(0);
  // NeMo's pre-training defaults: sequence parallelism with TP, the distributed optimizer with
  // its gradient reduce-scatter and parameter all-gather overlapped, TP communication overlapped
  // with the GEMMs, no recomputation; its FP8 mixed-precision recipes keep FP8 primary weights
  // (fp8_param_gather).
  p.sp = p.tp > 1;
  p.zero = 1;
  p.overlap_grad_reduce = true;
  p.overlap_param_gather = true;
  p.tp_comm_overlap = p.tp > 1;
  p.fp8_param_gather = p.precision == Precision::kFP8;
  return p;
}

// Whether a row's benchmark ran Transformer Engine with NVTE_FUSED_ATTN=0, its FlashAttention-2
// kernels in place of cuDNN's: the NeMo launcher configurations (configure.sh) of Grok-1 in
// v24.11.1 and v25.04.02 and of Nemotron-4 340B in v24.11.1 export it; those of Nemotron-4 15B
// and Llama 3.1 8B, and NeMo's performance scripts (every v25.05.05 row, v25.04.02's Nemotron
// and Llama), set NVTE_FUSED_ATTN=1.
bool runs_flash_attn2(const std::string& model, const std::string& tag) {
  if (model == "Grok-1 314B (MoE)") return tag == "v24.11.1" || tag == "v25.04.02";
  return model == "Nemotron4 340B" && tag == "v24.11.1";
}

// Whether a row's benchmark ran Megatron-Core's sequential experts: the NeMo launcher
// configurations (YAML) of Grok-1 in v24.11.1 and v25.04.02 set moe_grouped_gemm false; NeMo 2's
// performance scripts (every v25.05.05 MoE row) keep their recipes' grouped GEMM.
bool runs_sequential_experts(const std::string& model, const std::string& tag) {
  return model == "Grok-1 314B (MoE)" && (tag == "v24.11.1" || tag == "v25.04.02");
}

// Whether a row's benchmark reduced its gradients in BF16 (--grad-reduce-in-bf16): the NeMo
// launcher configurations (YAML) of every v24.11.1 recipe and of Grok-1 in v25.04.02 set
// optim.grad_sync_dtype bf16, which NeMo 1 hands Megatron-Core as grad_reduce_in_fp32 False; NeMo
// 2's performance scripts (v25.04.02's Nemotron and Llama, every v25.05.05 row) set the
// precision plugin's grad_reduce_in_fp32 False for FP8 (scripts/performance/utils.py and each
// script's FP8 branch), and for BF16 the recipes they build with performance_mode=True do
// (pretrain_performance_optimizations of nemotron4_15b, nemotron4_340b, llama3_8b and
// llama4_e128 at the NeMo commits the benchmarks' setup.sh pin, d2b2155, b4148d2 and 7a8f1cc;
// Grok-1's script itself). DeepSeek-V3's script builds its recipe without performance mode: its
// BF16 runs keep NeMo's default, fp32.
bool reduces_grads_in_bf16(const std::string& model, const std::string& tag, Precision precision) {
  if (tag == "v24.11.1" || precision == Precision::kFP8) return true;
  return model != "DeepSeek-V3 671B (MoE)";
}

// The Nemotron-4 340B benchmarks defer the LM head's weight gradients of 22 micro-batches to the
// pipeline flush: v24.11.1's nemotron4-340b-synth.yaml sets defer_embedding_wgrad_compute and
// wgrad_deferral_limit 22 (configure.sh does not override them), and NeMo 2's nemotron4_340b
// recipe in performance mode passes both to its MegatronCommOverlapCallback. v24.11.1's YAML also
// sets activations_checkpoint_granularity selective: Megatron-Core recomputes the core attention,
// and alone of that release's YAMLs the optimizer's dtype bf16 (distributed_fused_adam, dtype
// bf16): BF16 Adam moments and no FP32 master weights (--optimizer-state bf16).
// (Megatron-Core refuses the deferral without a pipeline: a row on one stage runs without it.)
void apply_nemotron4_340b_recipe(const std::string& tag, Plan& p,
                                 const std::function<void(const std::string&)>& says) {
  if (p.pp > 1) {
    p.defer_embedding_wgrad_compute = true;
    p.wgrad_deferral_limit = 22;
    says("defer-wgrad 22");
  }
  if (tag == "v24.11.1") {
    p.recompute = Recompute::kSelective;
    p.optimizer_state = OptimizerState::kBf16;
    says("selective recompute, bf16 optimizer state");
  }
}

// The documents of SQuAD as NeMo's SquadDataModule writes them ("Context: ... Question: ...
// Answer:" and the answer), in Llama 3 tokens, as the attention sees them: E[l^2] / E[l]. An
// estimate, fixed before any prediction: SQuAD's paragraphs run to about 140 word tokens and its
// questions about 11 (the figures commonly quoted for it, MRQA 2019's among them; not checked
// against the data here); at about 1.15 Llama 3 tokens to each and 8 for the template, the
// answer and the end tokens, a document holds about 180 on average, and a spread of 0.4 of the
// mean makes E[l^2] / E[l] about 1.16 times that. Anywhere from 100 to 400 tokens moves these
// rows' predictions by under 0.1 % (the attention is under 1 % of their FLOPs).
constexpr std::int64_t kSquadDocumentTokens = 200;

// The fine-tuning rows' benchmark (v25.04.02's ft_llama3: llama3_finetune.py and the NeMo commit
// its setup.sh pins, 25ec4e9, whose llama3_8b and llama3_70b finetune_recipe run in performance
// mode) packs SQuAD into sequences of seq_len (packed_sequence, padded to the length; set for
// both fine-tuning tasks by apply_benchmark_script). SFT rows run full fine-tuning with the
// distributed optimizer, its gradient reduce-scatter and parameter all-gather overlapped,
// gradients reduced in BF16 (grad_reduce_in_fp32 False), and for 70B TP communication overlapped
// and the LM head's weight gradients of 22 micro-batches deferred.
void apply_sft_recipe(const std::string& model, Plan& p,
                      const std::function<void(const std::string&)>& says) {
  if (model == "Llama3 70B" && p.pp > 1) {
    p.defer_embedding_wgrad_compute = true;
    p.wgrad_deferral_limit = 22;
    says("defer-wgrad 22");
  }
}

// The LoRA rows' benchmark (the same script and NeMo commit, finetune_recipe with peft_scheme
// lora in performance mode): adapters of dim 8 (8B) or 16 (70B) on
// linear_qkv alone (finetune_performance_optimizations sets target_modules); Megatron's plain
// optimizer (use_distributed_optimizer False) with NeMo's default DDP, which overlaps nothing;
// no comm-overlap callback, so neither TP communication nor the interleaved schedule's pipeline
// exchanges are overlapped (NeMo sets overlap_p2p_comm only through MegatronCommOverlapCallback,
// for VP > 1; Megatron-Core's ModelParallelConfig defaults it to False); FP8 rows without the
// FP8 parameter gather the distributed optimizer would do.
void apply_lora_recipe(const std::string& model, Plan& p,
                       const std::function<void(const std::string&)>& says) {
  p.lora_rank = model == "Llama3 70B" ? 16 : 8;
  p.lora_target_modules = kLoraQkv;
  p.zero = 0;
  p.overlap_grad_reduce = p.overlap_param_gather = p.tp_comm_overlap = false;
  if (p.schedule == ScheduleKind::kInterleaved) p.overlap_p2p_comm = false;
  p.fp8_param_gather = false;
  says("LoRA rank " + std::to_string(p.lora_rank) +
       " on linear_qkv, no distributed optimizer, no overlap");
}

// What a row's benchmark script sets beyond NeMo's defaults, where the script is known: the
// attention backend and the gradients' type above, and for the DeepSeek-V3 rows (v25.05.05) what
// NeMo's scripts/performance/llm/pretrain_deepseek_v3.py sets at the commit the benchmark's
// setup.sh pins (7a8f1cc, NeMo r2.3.0): selective recomputation of MLA's up-projections only
// (--recompute_modules mla_up_proj); Megatron's uneven pipeline split with 64 / pp - 1 layers in
// the first stage and 64 / pp - 2 in the last (the multi-token-prediction module and the LM head
// beside them); TP communication not overlapped (its comm-overlap callback sets tp_comm_overlap
// False); token dropping with capacity factor 1 and expert inputs padded to it
// (MegatronTokenDropCallback), which under balanced routing computes what dropless routing
// does. Returns what it set, for the row's setup; empty where nothing.
std::string apply_benchmark_script(const std::string& model, const std::string& tag,
                                   const std::string& task, Plan& p) {
  std::ostringstream out;
  const auto says = [&out](const std::string& what) {
    if (out.tellp() > 0) out << ", ";
    out << what;
  };
  if (task != "pretrain") {  // both fine-tuning recipes: SQuAD packed into each sequence
    p.packed_document_tokens = kSquadDocumentTokens;
    says("SQuAD packed, documents of " + std::to_string(kSquadDocumentTokens));
  }
  if (task == "finetune_SFT") apply_sft_recipe(model, p, says);
  if (task == "finetune_LoRA") apply_lora_recipe(model, p, says);
  if (runs_flash_attn2(model, tag)) {
    p.attention_backend = AttentionBackend::kFlashAttn2;
    says("flash-attn2 attention");
  }
  if (runs_sequential_experts(model, tag)) {
    p.moe_grouped_gemm = false;
    says("sequential experts");
  }
  if (reduces_grads_in_bf16(model, tag, p.precision)) {
    p.grad_reduce_in_bf16 = true;
    says("bf16 grad reduce");
  }
  if (const auto vp = launcher_vp(model, tag); vp && p.pp > 1 && p.vp == 1) {
    p.vp = vp;
    p.schedule = ScheduleKind::kInterleaved;
    says("vp " + std::to_string(vp) + " from its launch script");
  }
  if (model == "Nemotron4 340B") apply_nemotron4_340b_recipe(tag, p, says);
  if (model != "DeepSeek-V3 671B (MoE)" || p.pp < 2 || 64 % p.pp != 0) return out.str();
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeMlaUpProj;
  p.decoder_first_pipeline_num_layers = 64 / p.pp - 1;
  p.decoder_last_pipeline_num_layers = 64 / p.pp - 2;
  p.tp_comm_overlap = false;
  p.moe_capacity_factor = 1.0;
  says("first stage " + std::to_string(p.decoder_first_pipeline_num_layers) + " layers, last " +
       std::to_string(p.decoder_last_pipeline_num_layers) +
       ", recompute mla_up_proj, no TP overlap, capacity factor 1");
  return out.str();
}

ValidationRow dgxc_row(const nlohmann::json& j, const std::string& file, const std::string& path,
                       const Platform& platform) {
  const Fields f(j, file, path);
  ValidationRow row;
  const std::string model = f.string("model").value_or("");
  const auto gpus = f.integer("n_gpus").value_or(0);
  const std::string precision = f.string("precision").value_or("");
  std::string tag;
  if (f.has("source")) {
    if (!j.at("source").is_object()) f.fail("source", "must be an object");
    tag = Fields(j.at("source"), file, path + ".source").string("tag").value_or("");
  }
  const std::string task = f.string("task").value_or("pretrain");
  row.name = model + " " + precision + " " + std::to_string(gpus) + " GPUs (" + tag +
             (task == "pretrain" ? "" : ", " + task) + ")";
  row.half = split_half(row.name);
  // The mixture-of-experts rows came after the platform's calibration was fitted on the dense
  // ones: all of them check it, none is fitted on.
  if (model.find("(MoE)") != std::string::npos) row.half = "check";
  // So did the fine-tuning rows.
  if (task != "pretrain") row.half = "check";
  // So did the rows whose virtual pipeline size was read from their launch script later.
  if (launcher_vp(model, tag) && !f.integer("vp")) row.half = "check";
  const auto measured = f.number("step_time_s");
  if (!measured) {
    row.skipped = "no step time";
    return row;
  }
  row.measured = *measured;
  if (auto why = unexpressed(f, model, tag); !why.empty()) {
    row.skipped = why;
    return row;
  }
  Plan plan = dgxc_plan(f);
  const auto layers = f.integer("num_layers");
  const std::string script = apply_benchmark_script(model, tag, task, plan);
  // Where the script's split is not known and pp does not divide the layers, trainsim's balanced
  // rule stands for the recipe's layout.
  const bool uneven = plan.decoder_first_pipeline_num_layers >= 0;
  if (!uneven && layers && *layers % (plan.pp * plan.vp) != 0) plan.partition = "balanced";
  std::ostringstream setup;
  setup << catalog_model(model) << ", tp " << plan.tp << " pp " << plan.pp;
  if (plan.vp > 1) setup << " x vp " << plan.vp;
  if (plan.cp > 1) setup << " cp " << plan.cp;
  if (plan.ep > 1) setup << " ep " << plan.ep << " etp " << plan.expert_tp();
  if (layers) setup << ", " << *layers << " layers";
  setup << " dp " << plan.dp << ", mbs " << plan.mbs << ", gbs " << plan.gbs << ", seq "
        << plan.seq_len << ", ";
  if (!script.empty()) setup << script << ", ";
  setup << to_string(plan.precision);
  row.setup = setup.str();
  predict_step_time(
      row,
      [&] {
        Model m =
            load_model(resolve_catalog_entry("models", catalog_model(model), path + ".model"));
        if (layers) m.num_layers = *layers;  // a proxy: the recipe's model with fewer layers
        return m;
      },
      plan, platform);
  return row;
}

}  // namespace

ValidationSet validate_dgxc_step_time(const std::filesystem::path& reference,
                                      const Platform& platform) {
  const std::string file = reference.string();
  const nlohmann::json j = load_json_file(reference);
  const auto& rows =
      reference_rows(j, file, "not a DGX Cloud benchmark table (an object with a \"rows\" array)");
  ValidationSet set = step_time_set(
      reference, platform,
      "measured: seconds per optimizer step in NVIDIA's DGX Cloud benchmark READMEs; predicted: "
      "trainsim's step time (analytic engine, symmetric replay) for the row's model, layout, "
      "batch, sequence and precision with NeMo's pre-training defaults: sequence parallelism "
      "with TP, the distributed optimizer with overlapped gradient reduce-scatter and parameter "
      "all-gather, TP communication overlapped with its GEMMs, no recomputation, FP8 primary "
      "weights in FP8 rows; where the row's benchmark configuration is known, what it sets "
      "beyond them (FlashAttention-2 where it exports NVTE_FUSED_ATTN=0; sequential experts where "
      "it sets moe_grouped_gemm false; gradients reduced in BF16 where it sets grad_sync_dtype "
      "bf16 or grad_reduce_in_fp32 False; the virtual pipeline size its launch script passes where "
      "the table says NA; DeepSeek-V3's script; the fine-tuning rows' SQuAD packed into each "
      "sequence, and the LoRA rows' adapters, plain optimizer and no overlap)");
  set.rows = parallel_rows(rows, file, [&](const nlohmann::json& row, const std::string& path) {
    return dgxc_row(row, file, path, platform);
  });
  return set;
}

}  // namespace trainsim
