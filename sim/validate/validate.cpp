#include "sim/validate/validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"

namespace trainsim {

std::int64_t ValidationSet::expressed() const {
  return std::count_if(rows.begin(), rows.end(), [](const auto& r) { return !r.skipped; });
}

double ValidationSet::mean_abs_error() const {
  double sum = 0;
  for (const auto& r : rows) {
    if (!r.skipped) sum += std::fabs(r.error());
  }
  const auto n = expressed();
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

const ValidationRow* ValidationSet::worst() const {
  const ValidationRow* worst = nullptr;
  for (const auto& r : rows) {
    if (r.skipped) continue;
    if (worst == nullptr || std::fabs(r.error()) > std::fabs(worst->error())) worst = &r;
  }
  return worst;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double ValidationSet::overhead_fit() const {
  std::vector<double> residuals;
  for (const auto& r : rows) {
    if (!r.skipped) residuals.push_back(r.measured - (r.predicted - allocated_overhead));
  }
  return median(std::move(residuals));
}

std::pair<double, double> ValidationSet::leave_one_out_errors() const {
  std::vector<const ValidationRow*> expressed_rows;
  for (const auto& r : rows) {
    if (!r.skipped) expressed_rows.push_back(&r);
  }
  double sum = 0;
  double max = 0;
  for (const auto* held_out : expressed_rows) {
    std::vector<double> others;
    for (const auto* r : expressed_rows) {
      if (r != held_out) others.push_back(r->measured - (r->predicted - allocated_overhead));
    }
    const double predicted = held_out->predicted - allocated_overhead + median(std::move(others));
    const double error = std::fabs(predicted - held_out->measured) / held_out->measured;
    sum += error;
    max = std::max(max, error);
  }
  const auto n = static_cast<double>(expressed_rows.size());
  return {expressed_rows.empty() ? 0.0 : sum / n, max};
}

std::pair<double, double> ValidationSet::errors_without_overhead() const {
  double sum = 0;
  double max = 0;
  for (const auto& r : rows) {
    if (r.skipped) continue;
    const double error = std::fabs(r.predicted - allocated_overhead - r.measured) / r.measured;
    sum += error;
    max = std::max(max, error);
  }
  const auto n = expressed();
  return {n > 0 ? sum / static_cast<double>(n) : 0.0, max};
}

std::filesystem::path default_reference() {
  return data_dir() / "tests" / "validation" / "refdata" / "megatron_lm_ci_golden_values_h100.json";
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

// A row of a reference file read leniently (reference rows carry many fields trainsim does not
// use) but type-checked: a field of the wrong type is an error naming its JSON path.
class Fields {
 public:
  Fields(const nlohmann::json& j, std::string file, std::string path)
      : j_(j), file_(std::move(file)), path_(std::move(path)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  std::optional<std::int64_t> integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    const auto& v = j_.at(key);
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
      return static_cast<std::int64_t>(v.get<double>());
    }
    fail(key, "must be an integer, got " + v.dump());
  }
  std::optional<double> number(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_.at(key).is_number()) fail(key, "must be a number, got " + j_.at(key).dump());
    return j_.at(key).get<double>();
  }
  bool flag(const char* key) const {
    if (!has(key)) return false;
    if (!j_.at(key).is_boolean()) fail(key, "must be true or false, got " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }
  std::optional<std::string> string(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_.at(key).is_string()) fail(key, "must be a string, got " + j_.at(key).dump());
    return j_.at(key).get<std::string>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    fail_input(file_ + ": " + path_ + "." + key, what);
  }

 private:
  const nlohmann::json& j_;
  std::string file_;
  std::string path_;
};

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
  for (const auto& [key, value] : entry.at("args").items()) {
    if (key == "--attention-backend") {
      a.attention_backend = *args.string("--attention-backend");
    } else if (key == "--position-embedding-type") {
      a.position_embedding = *args.string("--position-embedding-type");
    } else if (key == "--disable-bias-linear") {
      a.disable_bias_linear = args.flag("--disable-bias-linear");
    } else if (key == "--decoder-first-pipeline-num-layers") {
      a.decoder_first = *args.integer("--decoder-first-pipeline-num-layers");
    } else if (key == "--decoder-last-pipeline-num-layers") {
      a.decoder_last = *args.integer("--decoder-last-pipeline-num-layers");
    } else if (key == "--account-for-embedding-in-pipeline-split") {
      a.account_for_embedding = args.flag("--account-for-embedding-in-pipeline-split");
    } else if (key == "--account-for-loss-in-pipeline-split") {
      a.account_for_loss = args.flag("--account-for-loss-in-pipeline-split");
    } else if (key == "--num-virtual-stages-per-pipeline-rank") {
      a.virtual_stages = *args.integer("--num-virtual-stages-per-pipeline-rank");
    } else if (key == "--microbatch-group-size-per-virtual-pipeline-stage") {
      a.microbatch_group = *args.integer("--microbatch-group-size-per-virtual-pipeline-stage");
    } else if (auto it = unmodelled.find(key); it != unmodelled.end()) {
      if (!a.unmodelled) a.unmodelled = it->second;
    } else if (std::find(no_memory_effect.begin(), no_memory_effect.end(), key) ==
               no_memory_effect.end()) {
      args.fail(key, "unknown launch argument (trainsim neither models nor ignores it)");
    }
  }
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

// One row of megatron_lm_ci_golden_values_h100.json against trainsim.
ValidationRow megatron_memory_row(const nlohmann::json& j, const std::string& file,
                                  const std::string& path, const nlohmann::json* supplement,
                                  const std::string& supplement_file, const Platform& platform) {
  const Fields f(j, file, path);
  ValidationRow row;
  const auto name = f.string("test_case");
  if (!name) f.fail("test_case", "is required (a string)");
  row.name = *name;
  const auto measured = f.number("mem_max_allocated_bytes_max");
  if (!measured) {
    row.skipped = "no mem-max-allocated-bytes";
    return row;
  }
  row.measured = *measured;
  const std::string family = f.string("model_family_dir").value_or("");
  if (auto why = family_skip(family, row.name); !why.empty()) {
    row.skipped = why;
    return row;
  }
  if (f.integer("num_experts").value_or(0) > 0 || f.integer("ep").value_or(1) > 1) {
    row.skipped = "mixture of experts (expert parallelism not modelled)";
    return row;
  }
  if (f.integer("cp").value_or(1) > 1) {
    row.skipped = "context parallelism not modelled";
    return row;
  }
  if (f.flag("megatron_fsdp")) {
    row.skipped = "Megatron FSDP not modelled";
    return row;
  }
  if (f.has("fp8_format")) {
    row.skipped = "FP8 training (Transformer Engine's FP8 copies) not modelled";
    return row;
  }
  if (f.flag("fp16")) {
    row.skipped = "fp16 mixed precision not modelled (BF16 only)";
    return row;
  }
  const bool dist_opt = f.flag("distributed_optimizer");
  auto gpus = f.integer("n_gpus");
  if (!gpus && dist_opt) {
    row.skipped = "GPU count unknown, and the distributed optimizer's shard depends on it";
    return row;
  }
  const ExtraArgs extra = read_extra_args(supplement, supplement_file, row.name);
  if (!extra.present) {
    row.skipped = "launch arguments beyond the golden file's subset not collected";
    return row;
  }
  if (extra.unmodelled) {
    row.skipped = *extra.unmodelled;
    return row;
  }
  const std::string granularity = f.string("recompute_granularity").value_or("");
  if (granularity == "full" && (f.string("recompute_method").value_or("uniform") != "uniform" ||
                                f.integer("recompute_num_layers").value_or(1) != 1)) {
    row.skipped = "full recomputation other than uniform over single layers not modelled";
    return row;
  }
  if (!gpus) {
    // Without the distributed optimizer dp changes neither the state nor, under 1F1B, the last
    // stage's single micro-batch in flight.
    gpus = 8;
    row.note =
        "GPU count not in the recipe; assumed 8 (one node), which does not change this "
        "stage's peak without the distributed optimizer";
  }

  Model m;
  m.name = row.name;
  m.source = file;
  auto required = [&f](const char* key) {
    const auto v = f.integer(key);
    if (!v) f.fail(key, "is required for a GPT row (an integer)");
    return *v;
  };
  m.num_layers = required("num_layers");
  m.hidden_size = required("hidden_size");
  m.num_attention_heads = required("num_attention_heads");
  m.num_kv_heads = f.flag("gqa") ? required("num_query_groups") : m.num_attention_heads;
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
  const std::int64_t seq = required("seq_length");
  if (extra.position_embedding == "rope") {
    m.position_embedding = PositionEmbedding::kRope;
  } else if (extra.position_embedding == "none") {
    m.position_embedding = PositionEmbedding::kNone;
  } else {
    m.position_embedding = PositionEmbedding::kLearned;
    m.max_position_embeddings = seq;
  }
  m.norm = NormKind::kLayerNorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = !extra.disable_bias_linear;

  Plan plan;
  plan.tp = required("tp");
  plan.pp = required("pp");
  plan.dp = *gpus / (plan.tp * plan.pp);
  plan.mbs = required("micro_batch_size");
  plan.gbs = f.integer("global_batch_size").value_or(0);
  plan.seq_len = seq;
  plan.sp = f.flag("sequence_parallel");
  plan.zero = dist_opt ? 1 : 0;
  plan.recompute = granularity == "full"        ? Recompute::kFull
                   : granularity == "selective" ? Recompute::kSelective
                                                : Recompute::kNone;
  plan.schedule = ScheduleKind::k1F1B;
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

  // Megatron-LM's defaults: dropout 0.1 on attention probabilities and hidden states; the local
  // implementation and --attention-backend unfused materialise the s x s probabilities.
  ActivationOptions options;
  options.hidden_dropout = true;
  options.attention_dropout = true;
  const bool local = f.string("transformer_impl").value_or("transformer_engine") == "local";
  options.flash_attention = !(local || extra.attention_backend == "unfused");

  std::ostringstream setup;
  setup << m.num_layers << " x " << m.hidden_size << " (" << m.num_attention_heads << "/"
        << m.num_kv_heads << " heads), tp " << plan.tp << " pp " << plan.pp << " dp " << plan.dp
        << ", mbs " << plan.mbs << " x " << seq;
  if (dist_opt) setup << ", dist-opt";
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
  if (swiglu) setup << ", swiglu";
  if (!m.tied_embeddings) setup << ", untied";
  if (m.position_embedding == PositionEmbedding::kRope) setup << ", rope";
  if (extra.disable_bias_linear) setup << ", no bias";
  if (extra.decoder_first >= 0 || extra.decoder_last >= 0) {
    setup << ", first/last stage " << extra.decoder_first << "/" << extra.decoder_last << " layers";
  }
  if (local) setup << ", local impl";
  row.setup = setup.str();

  try {
    validate_model(m, file);
    validate_plan(plan, m, platform, {});
    const Partition partition = build_partition(m, platform, plan);
    const CostModel costs = compute_costs(m, platform, plan, partition);
    const MemoryModel memory = compute_memory(m, platform, plan, partition, costs, options);
    // Megatron-LM writes TensorBoard from rank world_size - 1 (megatron/training/global_vars.py);
    // with its rank order (tp innermost, pp outermost) that is a GPU of the last stage.
    row.stage = partition.physical_stages() - 1;
    row.predicted = memory.stages.back().peak_allocated;
  } catch (const InputError& e) {
    row.skipped = std::string("not expressible: ") + e.what();
  }
  return row;
}

std::string percent(double x) {
  return format_fixed(100.0 * x, 1) + " %";
}

std::string signed_percent(double x) {
  std::string s = format_fixed(100.0 * x, 1);
  if (s[0] != '-') s = "+" + s;
  return s + " %";
}

}  // namespace

ValidationSet validate_reference(const std::filesystem::path& reference, const Platform& platform) {
  const std::string file = reference.string();
  const nlohmann::json j = load_json_file(reference);
  if (!j.is_object() || !j.contains("rows") || !j.at("rows").is_array() ||
      reference.filename().string().find("megatron_lm_ci_golden_values") == std::string::npos) {
    fail_input(file,
               "not a reference set trainsim can validate against (known: Megatron-LM CI golden "
               "values, megatron_lm_ci_golden_values_*.json)");
  }
  // The launch arguments the golden file leaves out live beside it.
  std::filesystem::path supplement_path = reference;
  std::string stem = reference.filename().string();
  stem.replace(stem.find("golden_values"), std::string("golden_values").size(), "model_args");
  supplement_path.replace_filename(stem);
  std::optional<nlohmann::json> supplement;
  std::error_code ec;
  if (std::filesystem::is_regular_file(supplement_path, ec)) {
    supplement = load_json_file(supplement_path);
  }

  ValidationSet set;
  set.reference = reference.filename().string();
  set.metric =
      "measured: mem-max-allocated-bytes, the largest torch.cuda.max_memory_allocated logged by "
      "rank world_size - 1 (the last pipeline stage); predicted: trainsim's peak allocated bytes "
      "of that stage (model state, activations walked over its 1F1B or interleaved 1F1B program, "
      "and the platform's "
      "allocated runtime overhead)";
  set.platform = platform.name;
  set.allocated_overhead = platform.memory.allocated;
  const auto& rows = j.at("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string path = "$.rows[" + std::to_string(i) + "]";
    if (!rows[i].is_object()) fail_input(file + ": " + path, "must be an object");
    set.rows.push_back(megatron_memory_row(rows[i], file, path, supplement ? &*supplement : nullptr,
                                           supplement_path.string(), platform));
  }
  return set;
}

std::string validation_markdown(const std::vector<ValidationSet>& sets) {
  std::ostringstream o;
  for (const auto& set : sets) {
    o << "# trainsim validate: " << set.reference << "\n\n";
    o << set.metric << ". Platform " << set.platform << ".\n\n";
    o << "| test case | run | stage | measured GiB | predicted GiB | error |\n";
    o << "|---|---|---|---|---|---|\n";
    std::vector<std::string> notes;
    for (const auto& r : set.rows) {
      if (r.skipped) continue;
      std::string name = r.name;
      if (!r.note.empty()) {
        auto it = std::find(notes.begin(), notes.end(), r.note);
        if (it == notes.end()) it = notes.insert(notes.end(), r.note);
        name += std::string(" (") + static_cast<char>('a' + (it - notes.begin())) + ")";
      }
      o << "| " << name << " | " << r.setup << " | " << r.stage << " | "
        << format_fixed(r.measured / kGiB, 3) << " | " << format_fixed(r.predicted / kGiB, 3)
        << " | " << signed_percent(r.error()) << " |\n";
    }
    o << "\n";
    for (std::size_t i = 0; i < notes.size(); ++i) {
      o << "(" << static_cast<char>('a' + i) << ") " << notes[i] << ".\n";
    }
    if (!notes.empty()) o << "\n";
    const auto* worst = set.worst();
    o << set.expressed() << " of " << set.rows.size() << " rows expressed: mean |error| "
      << percent(set.mean_abs_error()) << ", max |error| "
      << (worst ? percent(std::fabs(worst->error())) + " (" + worst->name + ")" : "n/a") << ".\n\n";
    o << "Calibration: measured minus predicted without the platform's allocated overhead ("
      << format_fixed(set.allocated_overhead / kMiB, 1) << " MiB in " << set.platform
      << "), median over the expressed rows: " << format_fixed(set.overhead_fit() / kMiB, 1)
      << " MiB. That median is the fit of memory.allocated_overhead_MiB: one number for every "
         "row. ";
    const auto [loo_mean, loo_max] = set.leave_one_out_errors();
    o << "Out of sample (each row predicted with the median fit on the other rows only): mean "
         "|error| "
      << percent(loo_mean) << ", max |error| " << percent(loo_max) << ". ";
    const auto [bare_mean, bare_max] = set.errors_without_overhead();
    o << "Without the overhead term: mean |error| " << percent(bare_mean) << ", max |error| "
      << percent(bare_max) << ".\n\n";
    // Skipped rows, grouped by reason in order of first appearance.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    for (const auto& r : set.rows) {
      if (!r.skipped) continue;
      auto it = std::find_if(by_reason.begin(), by_reason.end(),
                             [&](const auto& g) { return g.first == *r.skipped; });
      if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {*r.skipped, {}});
      it->second.push_back(r.name);
    }
    if (!by_reason.empty()) {
      o << "## Skipped rows\n\n| reason | rows |\n|---|---|\n";
      for (const auto& [reason, names] : by_reason) {
        o << "| " << reason << " | " << names.size() << ": ";
        for (std::size_t i = 0; i < names.size(); ++i) o << (i ? ", " : "") << names[i];
        o << " |\n";
      }
      o << "\n";
    }
  }
  return o.str();
}

std::string validation_json(const std::vector<ValidationSet>& sets) {
  using J = nlohmann::ordered_json;
  J out = J::array();
  for (const auto& set : sets) {
    J rows = J::array();
    for (const auto& r : set.rows) {
      J row{{"name", r.name}};
      if (r.skipped) {
        row["skipped"] = *r.skipped;
      } else {
        row["setup"] = r.setup;
        row["stage"] = r.stage;
        row["measured_bytes"] = r.measured;
        row["predicted_bytes"] = r.predicted;
        row["error"] = r.error();
        if (!r.note.empty()) row["note"] = r.note;
      }
      rows.push_back(std::move(row));
    }
    const auto* worst = set.worst();
    out.push_back(J{{"reference", set.reference},
                    {"metric", set.metric},
                    {"platform", set.platform},
                    {"expressed", set.expressed()},
                    {"rows_total", set.rows.size()},
                    {"mean_abs_error", set.mean_abs_error()},
                    {"max_abs_error", worst ? std::fabs(worst->error()) : 0.0},
                    {"allocated_overhead_bytes", set.allocated_overhead},
                    {"overhead_fit_bytes", set.overhead_fit()},
                    {"leave_one_out_mean_abs_error", set.leave_one_out_errors().first},
                    {"leave_one_out_max_abs_error", set.leave_one_out_errors().second},
                    {"mean_abs_error_without_overhead", set.errors_without_overhead().first},
                    {"max_abs_error_without_overhead", set.errors_without_overhead().second},
                    {"rows", std::move(rows)}});
  }
  return J{{"validation", std::move(out)}}.dump(2) + "\n";
}

}  // namespace trainsim
