// Megatron-LM's SC21 weak-scaling table on DGX A100 (Narayanan et al. 2021, Table 1, in
// narayanan2021_megatron_a100_table1_table2.json) against trainsim's step time. The table gives
// TFLOP/s per GPU by the paper's Eq. 3, which counts the recomputed forward pass; the step time
// it implies is Eq. 3's FLOPs over that rate and the GPUs. The micro-batch size, virtual pipeline
// size and gradient all-reduce of each model size are those of the launch script NVIDIA published
// with the paper (narayanan2021_sc21_run_args.json, beside the table).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/validate/megatron_ci_args.hpp"
#include "sim/validate/parallel_rows.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/step_time.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

constexpr std::int64_t kSeqLen = 2048;  // every row of the table

// The paper's Eq. 3: FLOPs of one iteration with full recomputation, batch B, sequence s, l
// layers of width h and vocabulary V: 96 B s l h^2 (1 + s / 6h + V / 16 l h).
double eq3_flops(double batch, double seq, double layers, double hidden, double vocab) {
  return 96.0 * batch * seq * layers * hidden * hidden *
         (1.0 + seq / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

// The GPT of a row as Megatron-LM built it in 2021: GeLU MLP of 4h, learned positions, LayerNorm,
// biases, tied embeddings, the padded GPT-2 vocabulary.
Model sc21_model(const Fields& f, const std::string& name, const std::string& file) {
  auto required = [&f](const char* key) { return f.required_integer(key, "a Table 1 row"); };
  return megatron_default_gpt({.layers = required("num_layers"),
                               .hidden = required("hidden_size"),
                               .heads = required("attention_heads"),
                               .vocab = required("vocab_size"),
                               .tied = true,
                               .max_positions = kSeqLen},
                              name, file);
}

// The index of the launch-script row with the table row's width and depth, or nothing.
std::optional<std::size_t> launch_args(const nlohmann::json* args, const Fields& f) {
  if (args == nullptr || !args->contains("rows_table1") || !args->at("rows_table1").is_array()) {
    return std::nullopt;
  }
  const auto hidden = f.integer("hidden_size");
  const auto layers = f.integer("num_layers");
  const auto& rows = args->at("rows_table1");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].is_object() && rows[i].value("hidden_size", -1) == hidden &&
        rows[i].value("num_layers", -1) == layers) {
      return i;
    }
  }
  return std::nullopt;
}

Plan sc21_plan(const Fields& row, const Fields& script, const Model& m) {
  Plan p;
  p.tp = row.required_integer("tp", "a Table 1 row");
  p.pp = row.required_integer("pp", "a Table 1 row");
  p.dp = row.required_integer("n_gpus", "a Table 1 row") / (p.tp * p.pp);
  p.mbs = script.required_integer("micro_batch_size", "a launch-script row");
  p.gbs = row.required_integer("global_batch_size", "a Table 1 row");
  p.seq_len = kSeqLen;
  p.recompute = Recompute::kFull;
  // Megatron-LM's 2021 attention: batched GEMMs around its fused scale-mask-softmax.
  p.attention_backend = AttentionBackend::kUnfused;
  // The scripts' common arguments (examples/sc21/CONFIG.sh) set no dropout: Megatron-LM's
  // defaults.
  p.attention_dropout = kMegatronDefaultDropout;
  p.hidden_dropout = kMegatronDefaultDropout;
  if (const auto per_chunk = script.integer("num_layers_per_virtual_pipeline_stage")) {
    p.vp = m.num_layers / (p.pp * *per_chunk);
    if (p.vp > 1) p.schedule = ScheduleKind::kInterleaved;
  }
  // PyTorch's DDP overlaps its bucketed all-reduce with the backward pass; Megatron-LM's local
  // DDP all-reduces after it.
  p.overlap_grad_reduce = script.string("ddp_impl").value_or("") == "torch";
  return p;
}

std::string sc21_setup(const Model& m, const Plan& p) {
  std::ostringstream s;
  s << m.num_layers << " x " << m.hidden_size << ", tp " << p.tp << " pp " << p.pp;
  if (p.vp > 1) s << " x vp " << p.vp;
  s << " dp " << p.dp << ", mbs " << p.mbs << ", gbs " << p.gbs << ", seq " << p.seq_len
    << ", full recompute, unfused attention, dropout " << p.attention_dropout << ", "
    << (p.overlap_grad_reduce ? "torch DDP" : "local DDP");
  return s.str();
}

ValidationRow table1_row(const nlohmann::json& j, const std::string& file, const std::string& path,
                         const nlohmann::json* args, const std::string& args_file,
                         const Platform& platform) {
  const Fields f(j, file, path);
  ValidationRow row;
  const double billions = f.number("params_billion").value_or(0);
  std::ostringstream name;
  name << "GPT " << billions << "B " << f.integer("n_gpus").value_or(0) << " GPUs (SC21 Table 1)";
  row.name = name.str();
  row.half = split_half(row.name);
  const auto tflops = f.number("tflops_per_gpu");
  const auto gpus = f.integer("n_gpus");
  if (!tflops || !gpus) {
    row.skipped = "no TFLOP/s per GPU or GPU count";
    return row;
  }
  const Model m = sc21_model(f, row.name, file);
  row.measured =
      eq3_flops(static_cast<double>(f.required_integer("global_batch_size", "a Table 1 row")),
                kSeqLen, static_cast<double>(m.num_layers), static_cast<double>(m.hidden_size),
                static_cast<double>(m.vocab_size)) /
      (*tflops * 1e12 * static_cast<double>(*gpus));
  const auto script = launch_args(args, f);
  if (!script) {
    row.skipped = "micro-batch size not known (no launch-script row in " +
                  std::filesystem::path(args_file).filename().string() + ")";
    return row;
  }
  const Plan plan = sc21_plan(f,
                              Fields(args->at("rows_table1")[*script], args_file,
                                     "$.rows_table1[" + std::to_string(*script) + "]"),
                              m);
  row.setup = sc21_setup(m, plan);
  predict_step_time(
      row,
      [&] {
        validate_model(m, file);
        return m;
      },
      plan, platform);
  return row;
}

// Table 2 compares PTD-P with DeepSpeed's ZeRO-3; neither half gives a full recipe.
ValidationRow table2_row(const nlohmann::json& j, const std::string& file,
                         const std::string& path) {
  const Fields f(j, file, path);
  ValidationRow row;
  const std::string scheme = f.string("scheme").value_or("");
  std::ostringstream name;
  name << "GPT " << f.number("params_billion").value_or(0) << "B " << scheme << " "
       << f.integer("n_gpus").value_or(0) << " GPUs (SC21 Table 2)";
  row.name = name.str();
  row.half = split_half(row.name);
  row.skipped = scheme == "PTD-P" ? "the split of the model-parallel size into TP x PP and the "
                                    "virtual pipeline size are not given"
                                  : "DeepSpeed ZeRO-3 baseline: its recomputation and prefetch "
                                    "settings are not given";
  return row;
}

}  // namespace

ValidationSet validate_sc21_step_time(const std::filesystem::path& reference,
                                      const Platform& platform) {
  const std::string file = reference.string();
  const nlohmann::json j = load_json_file(reference);
  const auto& table1 = reference_rows(
      j, file, "not the SC21 tables (an object with a \"rows_table1\" array)", "rows_table1");
  std::filesystem::path args_path = reference;
  args_path.replace_filename("narayanan2021_sc21_run_args.json");
  std::optional<nlohmann::json> args;
  std::error_code ec;
  if (std::filesystem::is_regular_file(args_path, ec)) args = load_json_file(args_path);

  ValidationSet set = step_time_set(
      reference, platform,
      "measured: the step time implied by Megatron-LM's SC21 Table 1 on DGX A100 (the paper's "
      "Eq. 3 FLOPs of a step over its TFLOP/s per GPU and GPU count); predicted: trainsim's step "
      "time (analytic engine, symmetric replay) for the model, layout and batch of the row with "
      "the micro-batch size, virtual pipeline size and DDP of NVIDIA's launch script, full "
      "recomputation, unfused attention, Megatron-LM's default dropout (0.1 on the attention "
      "probabilities and the hidden states), no sequence parallelism or distributed optimizer "
      "(2021)");
  set.rows = parallel_rows(
      table1, file,
      [&](const nlohmann::json& row, const std::string& path) {
        return table1_row(row, file, path, args ? &*args : nullptr, args_path.string(), platform);
      },
      "rows_table1");
  const std::string table2 = "rows_table2_ptdp_vs_zero3";
  if (j.contains(table2)) {
    for_each_row(
        reference_rows(j, file, "$." + table2 + " must be an array", table2), file,
        [&](const nlohmann::json& row, const std::string& path) {
          set.rows.push_back(table2_row(row, file, path));
        },
        table2);
  }
  return set;
}

}  // namespace trainsim
