#include "sim/plan/torchtitan_config.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/torchtitan_reader.hpp"

namespace trainsim {

namespace {

using torchtitan::Degrees;
using torchtitan::integer_or;
using torchtitan::kDegree;
using torchtitan::Reader;
using torchtitan::table;

// Bounds that keep the products of degrees and batches within 64 bits.
constexpr std::int64_t kMaxDataParallel = std::int64_t{1} << 24;

// data_parallel_shard_degree -1: the ranks the world size (--gpus, or --dp) leaves.
std::int64_t leftover_shard(JsonObject& p, const Degrees& d, const Reader& r) {
  const std::string key = "data_parallel_shard_degree";
  if (const auto dp = r.flag_integer("dp")) {
    if (*dp % d.replicate != 0) {
      p.fail("data_parallel_replicate_degree",
             "must divide --dp (" + std::to_string(*dp) + "), got " + std::to_string(d.replicate));
    }
    return *dp / d.replicate;
  }
  const auto gpus = r.flag_integer("gpus");
  if (!gpus) {
    p.fail(key,
           "-1 (torchtitan's default) takes the ranks the world size leaves, which the config "
           "does not hold: add --gpus N (torchrun's --nproc-per-node x --nnodes)");
  }
  // Each degree is at most 2^16 (kDegree): the product fits in 64 bits.
  const std::int64_t others = d.replicate * d.tp * d.pp * d.cp;
  if (*gpus % others != 0) {
    fail_input("--gpus",
               "must be a multiple of replicate x tp x pp x cp = " + std::to_string(others) + " (" +
                   p.where(key) + " is -1), got " + std::to_string(*gpus));
  }
  return *gpus / others;
}

Degrees degrees(JsonObject& p, Reader& r) {
  Degrees d;
  d.replicate = integer_or(p, "data_parallel_replicate_degree", 1);
  d.tp = integer_or(p, "tensor_parallel_degree", 1);
  d.pp = integer_or(p, "pipeline_parallel_degree", 1);
  d.cp = integer_or(p, "context_parallel_degree", 1);
  const std::string key = "data_parallel_shard_degree";
  d.shard = integer_or(p, key, -1, {-1, std::int64_t{1} << 16});
  if (d.shard == 0) p.fail(key, "must be -1 or at least 1 (torchtitan's rule), got 0");
  if (d.shard == -1) d.shard = leftover_shard(p, d, r);
  if (d.dp() > kMaxDataParallel) {
    p.fail(key, "makes " + std::to_string(d.dp()) +
                    " data-parallel ranks (replicate x shard), "
                    "more than trainsim prices (" +
                    std::to_string(kMaxDataParallel) + ")");
  }
  r.set(p, key, "dp", std::to_string(d.dp()));
  r.set(p, "tensor_parallel_degree", "tp", std::to_string(d.tp));
  // torchtitan's tensor parallelism runs the norms sequence-parallel (a --tp of the command
  // line takes --sp from it too).
  if (d.tp > 1 && !r.flagged("tp")) r.set(p, "tensor_parallel_degree", "sp", "true");
  r.set(p, "pipeline_parallel_degree", "pp", std::to_string(d.pp));
  r.set(p, "context_parallel_degree", "cp", std::to_string(d.cp));
  if (d.cp > 1) {
    const std::string method =
        p.optional_choice("context_parallel_rotate_method", {"allgather", "alltoall"})
            .value_or("allgather");
    // alltoall passes the K/V shards around the ring; allgather gathers them all.
    r.set(p, "context_parallel_rotate_method", "cp_comm",
          method == "alltoall" ? "p2p" : "allgather");
  }
  return d;
}

// mbs: the local batch, or with pipelining its micro-batch; gbs: the global batch, or the local
// batch of every data-parallel rank. Returns the config's seq_len.
std::int64_t batch(JsonObject& t, JsonObject& p, const Degrees& d, Reader& r) {
  // Older torchtitan named the local batch batch_size.
  const std::string key =
      !t.has("local_batch_size") && t.has("batch_size") ? "batch_size" : "local_batch_size";
  const std::int64_t local = integer_or(t, key, 8, {1, std::int64_t{1} << 24});
  const std::int64_t seq_len = integer_or(t, "seq_len", 2048, {1});
  r.set(t, "seq_len", "seq_len", std::to_string(seq_len));
  const std::int64_t global = integer_or(t, "global_batch_size", -1, {-1, std::int64_t{1} << 40});
  if (global > 0) {
    if (global % (local * d.dp()) != 0) {
      t.fail("global_batch_size", "must be a multiple of " + key + " x data parallelism (" +
                                      std::to_string(local) + " x " + std::to_string(d.dp()) +
                                      "), as torchtitan asks, got " + std::to_string(global));
    }
    r.set(t, "global_batch_size", "gbs", std::to_string(global));
    const std::int64_t steps = global / (local * d.dp());
    if (steps > 1 && d.pp == 1 && d.dp() * d.cp > 1) {
      // train_step runs each micro-batch's backward with FSDP's (and DDP's) gradient sync on;
      // the pipeline schedules sync at the last micro-batch only.
      r.set(t, "global_batch_size", "grad_reduce_per_microbatch", "true");
    }
  } else if (global == -1) {
    r.set(t, key, "gbs", std::to_string(local * d.dp()));
  } else {
    t.fail("global_batch_size", "must be -1 (local x dp) or positive, got 0");
  }
  if (d.pp == 1) {
    r.set(t, key, "mbs", std::to_string(local));
    return seq_len;
  }
  const std::string mb = "pipeline_parallel_microbatch_size";
  const std::int64_t micro = integer_or(p, mb, 1, {1, std::int64_t{1} << 30});
  if (local % micro != 0) {
    p.fail(mb, "must divide " + t.where(key) + " (" + std::to_string(local) + "), got " +
                   std::to_string(micro));
  }
  r.set(p, mb, "mbs", std::to_string(micro));
  return seq_len;
}

// selective_ac_option N: torchtitan checkpoints every N-th block a rank builds (a count over the
// rank's model parts), floor(layers / N) of each part; priced as full recomputation of that many
// layers of each chunk where every rank's part holds one model part and the same count.
void every_nth_layer(JsonObject& a, std::int64_t n, const std::vector<std::int64_t>& parts,
                     Reader& r) {
  const std::string key = "selective_ac_option";
  std::vector<std::int64_t> counts;
  for (const std::int64_t layers : parts) counts.push_back(layers / n);
  const bool same = !counts.empty() && std::all_of(counts.begin(), counts.end(),
                                                   [&](std::int64_t c) { return c == counts[0]; });
  if (!same) {
    r.unpriced(a, key, "recompute",
               "'" + std::to_string(n) + "' (every N-th layer checkpointed) checkpoints " +
                   (parts.empty() ? std::string("a count running over several model parts")
                                  : "different counts on different stages") +
                   ", which is not modelled");
    return;
  }
  if (counts[0] == 0) {
    r.set(a, key, "recompute", "none");
    return;
  }
  r.set(a, key, "recompute", "full");
  r.set(a, key, "recompute_num_layers", std::to_string(counts[0]));
}

// mode none, full, or selective: every N-th layer (N = 1: all of them) or per operator
// (--recompute op, torchtitan's own policy).
void recompute(JsonObject& a, const std::vector<std::int64_t>& parts, Reader& r) {
  const std::string mode =
      a.optional_choice("mode", {"none", "selective", "full"}).value_or("selective");
  if (mode != "selective") {
    r.set(a, "mode", "recompute", mode);
    return;
  }
  const std::string key = "selective_ac_option";
  std::string option = "2";
  if (a.has(key)) {
    const nlohmann::json& v = a.raw(key);
    option = v.is_string() ? v.get<std::string>() : v.is_number_integer() ? v.dump() : "";
  }
  if (option == "1") {
    r.set(a, key, "recompute", "full");
  } else if (option == "op") {
    r.set(a, key, "recompute", "op");
  } else if (option.empty() || option.size() > 9 ||
             option.find_first_not_of("0123456789") != std::string::npos ||
             option.starts_with("0")) {
    a.fail(key, "must be 'op' or a positive integer (every N-th layer), got " + a.raw(key).dump());
  } else {
    every_nth_layer(a, std::stoll(option), parts, r);
  }
}

// The converters a [model] lists: "float8" or "float8,mx" (a string) or ["float8"].
std::vector<std::string> converters(JsonObject& m) {
  std::vector<std::string> out;
  if (!m.has("converters")) return out;
  const nlohmann::json& v = m.raw("converters");
  if (v.is_string()) {
    const std::string list = v.get<std::string>();
    std::size_t from = 0;
    while (from <= list.size()) {
      const std::size_t comma = std::min(list.find(',', from), list.size());
      if (comma > from) out.push_back(list.substr(from, comma - from));
      from = comma + 1;
    }
    return out;
  }
  if (!v.is_array()) m.fail("converters", "must be a string or a list of strings");
  for (const auto& c : v) {
    if (!c.is_string()) m.fail("converters", "must be a string or a list of strings");
    out.push_back(c.get<std::string>());
  }
  return out;
}

// BF16 mixed precision, or FP8 GEMMs by the float8 converter (torchao's dynamic tensorwise
// scaling, which Transformer Engine's current scaling matches), its weights all-gathered in FP8
// under FSDP where [float8] asks.
void precision(JsonObject& top, JsonObject& t, bool fsdp, const Model& model, Reader& r) {
  if (t.optional_choice("mixed_precision_param", {"bfloat16", "float32"}).value_or("bfloat16") !=
      "bfloat16") {
    r.unpriced(t, "mixed_precision_param", "precision", "FP32 training is not modelled");
  }
  if (t.optional_choice("mixed_precision_reduce", {"float32", "bfloat16"}).value_or("float32") ==
      "bfloat16") {
    r.set(t, "mixed_precision_reduce", "grad_reduce_in_bf16", "true");
  }
  JsonObject m = table(top, "model");
  bool fp8 = false;
  for (const auto& c : converters(m)) {
    if (c == "float8" || c == "quantize.linear.float8") {
      fp8 = true;
    } else if (c == "mx" || c.starts_with("quantize.linear.mx")) {
      r.unpriced(m, "converters", "precision", "MXFP8 ('" + c + "') runs on Blackwell only");
    } else {
      r.note(m.where("converters") + ": '" + c + "' is not priced");
    }
  }
  if (!fp8) {
    r.set(m, "converters", "precision", "bf16");
    return;
  }
  if (model.moe.is_moe()) {
    // torchao's float8 linears leave the experts' grouped GEMMs to their own converter
    // (quantize.grouped_mm.float8, rowwise scaled): two precisions, or two recipes, in one layer.
    r.unpriced(m, "converters", "precision",
               "FP8 on a mixture-of-experts model (float8 linear layers, the experts' grouped "
               "GEMMs in BF16 or in rowwise FP8) is not modelled");
    return;
  }
  r.set(m, "converters", "precision", "fp8");
  JsonObject f = table(top, "float8");
  const std::string recipe = f.optional_string("recipe_name").value_or("tensorwise");
  if (recipe == "tensorwise") {
    r.set(f, "recipe_name", "fp8_recipe", "tensorwise");
  } else {
    r.unpriced(f, "recipe_name", "fp8_recipe",
               "'" + recipe + "' (a scale per row) is not modelled (tensorwise is)");
  }
  if (fsdp && f.optional_boolean("enable_fsdp_float8_all_gather").value_or(false)) {
    r.set(f, "enable_fsdp_float8_all_gather", "fp8_param_gather", "true");
  }
}

// FSDP as ZeRO: 3 where the weights are gathered before each pass and resharded after it, 1
// under pipelining (torchtitan's default there keeps them gathered through the step and
// reduce-scatters the gradients at the last backward, as Megatron's distributed optimizer);
// DDP (replicate only) all-reduces, ZeRO 0. HSDP (replicate and shard both above 1) shards
// within each of the replicate degree's instances: the weights gathered and the gradients
// reduce-scattered over shard x cp ranks, each shard all-reduced across the replicas, as FSDP2's
// hybrid mesh does. Returns whether FSDP runs.
bool sharding(JsonObject& p, const Degrees& d, Reader& r) {
  const bool fsdp = d.shard * d.cp > 1;
  const std::string key = "data_parallel_shard_degree";
  if (!fsdp) {
    r.set(p, key, "zero", "0");
    // DDP reduces its gradient buckets while the backward runs.
    if (d.dp() > 1) r.set(p, "data_parallel_replicate_degree", "overlap_grad_reduce", "true");
    return false;
  }
  if (d.replicate > 1) {
    r.set(p, "data_parallel_replicate_degree", "num_distributed_optimizer_instances",
          std::to_string(d.replicate));
  }
  const std::string reshard_key = "fsdp_reshard_after_forward";
  const std::string reshard =
      p.optional_choice(reshard_key, {"default", "always", "never"}).value_or("default");
  if (d.pp == 1 && reshard != "never") {
    r.set(p, key, "zero", "3");
  } else if (d.pp > 1 && reshard != "always") {
    r.set(p, key, "zero", "1");
  } else {
    r.unpriced(p, reshard_key, "zero",
               "'" + reshard + "' with pipeline parallelism " + std::to_string(d.pp) +
                   " is not modelled (the default is)");
    return true;
  }
  // FSDP prefetches the next block's weights and reduce-scatters each block's gradients while
  // the backward goes on.
  r.set(p, key, "overlap_grad_reduce", "true");
  r.set(p, key, "overlap_param_gather", "true");
  return true;
}

// Keys of [parallelism] and [activation_checkpoint] that this reader does not know: a newer
// torchtitan's, or a typo; listed, since each may change what a step costs.
void unknown_keys(const JsonObject& o, const nlohmann::json& config, const std::string& section,
                  const std::set<std::string>& known, Reader& r) {
  if (!config.contains(section) || !config.at(section).is_object()) return;
  std::vector<std::string> unknown;
  for (const auto& [k, v] : config.at(section).items()) {
    if (!known.contains(k)) unknown.push_back(k);
  }
  if (!unknown.empty()) r.note(o.where(section) + ": not read: " + join(unknown, ", "));
}

const std::set<std::string> kParallelismKeys = {"data_parallel_replicate_degree",
                                                "data_parallel_shard_degree",
                                                "tensor_parallel_degree",
                                                "pipeline_parallel_degree",
                                                "context_parallel_degree",
                                                "context_parallel_rotate_method",
                                                "expert_parallel_degree",
                                                "expert_tensor_parallel_degree",
                                                "expert_parallel_comm_backend",
                                                "pipeline_parallel_schedule",
                                                "pipeline_parallel_layers_per_stage",
                                                "pipeline_parallel_split_points",
                                                "pipeline_parallel_microbatch_size",
                                                "fsdp_reshard_after_forward",
                                                "enable_async_tensor_parallel",
                                                "disable_loss_parallel",
                                                "enable_compiled_autograd"};
const std::set<std::string> kCheckpointKeys = {"mode", "selective_ac_option",
                                               "per_op_sac_force_recompute_mm_shapes_by_fqns"};

}  // namespace

TorchtitanPlan plan_from_torchtitan_config(const nlohmann::json& config, const std::string& file,
                                           const Model& model,
                                           const std::map<std::string, std::string>& flags) {
  TorchtitanPlan out;
  Reader r(out, flags);
  JsonObject top(config, file);
  JsonObject p = table(top, "parallelism");
  JsonObject t = table(top, "training");
  const Degrees d = degrees(p, r);
  torchtitan::experts(p, d, model, r);
  const std::int64_t seq_len = batch(t, p, d, r);
  const std::vector<std::int64_t> parts = torchtitan::pipeline(p, d, model.num_layers, r);
  JsonObject a = table(top, "activation_checkpoint");
  recompute(a, parts, r);
  const bool fsdp = sharding(p, d, r);
  precision(top, t, fsdp, model, r);
  torchtitan::flavor_differences(top, model, r.flag_integer("seq_len").value_or(seq_len), r);
  // torch.compile: training.compile, or (later torchtitan) compile.enable.
  JsonObject c = table(top, "compile");
  const bool compiled =
      t.optional_boolean("compile").value_or(false) || c.optional_boolean("enable").value_or(false);
  if (p.optional_boolean("enable_async_tensor_parallel").value_or(false) && d.tp > 1) {
    // Async TP overlaps the TP collectives with the GEMMs, and only under torch.compile.
    if (compiled) {
      r.set(p, "enable_async_tensor_parallel", "tp_comm_overlap", "true");
    } else {
      r.note(p.where("enable_async_tensor_parallel") +
             ": ignored, as torchtitan does without torch.compile");
    }
  }
  if (compiled) {
    r.note((t.has("compile") ? t.where("compile") : c.where("enable")) +
           ": torch.compile's fusions are not priced");
  }
  JsonObject o = table(top, "optimizer");
  const std::string optimizer = o.optional_string("name").value_or("AdamW");
  if (optimizer != "AdamW" && optimizer != "Adam") {
    o.fail("name", "'" + optimizer + "' is not modelled (AdamW and Adam are)");
  }
  // torchtitan pads no vocabulary.
  out.fields["vocab_divisible_by"] = "1";
  out.origin["vocab_divisible_by"] = file + " (torchtitan pads no vocabulary)";
  unknown_keys(top, config, "parallelism", kParallelismKeys, r);
  unknown_keys(top, config, "activation_checkpoint", kCheckpointKeys, r);
  return out;
}

}  // namespace trainsim
