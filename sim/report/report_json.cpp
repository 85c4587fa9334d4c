#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/plan/plan_schema.hpp"
#include "sim/report/report.hpp"

namespace trainsim {

namespace {

nlohmann::ordered_json comm_json(const std::array<double, kNumCommKinds>& c) {
  nlohmann::ordered_json j;
  for (std::size_t k = 0; k < kNumCommKinds; ++k) j[to_string(static_cast<CommKind>(k))] = c[k];
  return j;
}

}  // namespace

namespace {

using J = nlohmann::ordered_json;

// A scenario's published figures: step times (given as such or as tokens/s per GPU) and peak
// allocations, each with trainsim's error when compared.
J published_json(const Report& r) {
  const bool compared = r.published.not_compared.empty();
  J steps = J::array(), memory = J::array();
  for (const auto& f : r.published.figures) {
    if (f.gives_step()) {
      J fj = J::object();
      if (f.step_time_s > 0) fj["step_time_s"] = f.step_time_s;
      if (f.tokens_per_s_per_gpu > 0) fj["tokens_per_s_per_gpu"] = f.tokens_per_s_per_gpu;
      fj["source"] = f.source;
      if (compared) fj["error"] = f.error_of(r.step_time_s);
      steps.push_back(std::move(fj));
    }
    if (f.gives_memory()) {
      J fj{{"max_allocated_bytes", std::llround(f.max_allocated_bytes)}, {"source", f.source}};
      if (compared) {
        const StageReport& s = r.largest_allocation();
        fj["stage"] = s.index;
        fj["error"] = f.memory_error_of(s.peak_allocated_bytes);
      }
      memory.push_back(std::move(fj));
    }
  }
  J j{{"step_times", std::move(steps)}};
  if (!memory.empty()) j["max_allocated"] = std::move(memory);
  if (!compared) j["not_compared"] = r.published.not_compared;
  return j;
}

J memory_json(const StageReport::Memory& m) {
  J j{{"weights_bytes", std::llround(m.weights)},
      {"gradients_bytes", std::llround(m.gradients)},
      {"master_weights_bytes", std::llround(m.master_weights)},
      {"optimizer_bytes", std::llround(m.optimizer)},
      {"activations_bytes", std::llround(m.activations)},
      {"microbatches_in_flight", m.microbatches_in_flight},
      {"runtime_bytes", std::llround(m.runtime)}};
  // Only where the stage's peak holds deferred LM-head buffers (part of activations_bytes).
  if (m.deferred_microbatches > 0) {
    j["deferred_lm_head_bytes"] = std::llround(m.deferred_lm_head);
    j["deferred_microbatches"] = m.deferred_microbatches;
  }
  return j;
}

J collectives_json(const std::vector<CollectiveStat>& cs) {
  J out = J::array();
  for (const auto& c : cs) {
    out.push_back({{"dim", to_string(comm_kind(c.dim))},
                   {"group_dim", to_string(c.dim)},
                   {"collective", to_string(c.kind)},
                   {"algorithm", to_string(c.algorithm)},
                   {"members", c.members},
                   {"nodes", c.nodes},
                   {"calls", c.calls},
                   {"bytes", std::llround(c.bytes)},
                   {"seconds", c.seconds},
                   {"bus_bandwidth_bytes_per_s", c.bus_bandwidth}});
  }
  return out;
}

J stage_json(const StageReport& s) {
  std::vector<std::string> blocks;
  for (const auto& c : s.chunks) blocks.insert(blocks.end(), c.begin(), c.end());
  J sj{{"index", s.index}, {"blocks", blocks}};
  if (!s.virtual_stages.empty()) {
    J chunks = J::array();
    for (std::size_t c = 0; c < s.chunks.size(); ++c) {
      chunks.push_back(J{{"virtual_stage", s.virtual_stages[c]}, {"blocks", s.chunks[c]}});
    }
    sj["chunks"] = std::move(chunks);
  }
  sj["layers"] = s.layers;
  sj["params"] = s.params;
  sj["params_per_gpu"] = s.params_per_gpu;
  sj["forward_s"] = s.forward_s;
  sj["backward_s"] = s.backward_s;
  sj["recompute_s"] = s.recompute_s;
  sj["wait_s"] = s.wait_s;
  sj["compute_s"] = s.compute_s;
  sj["exposed_comm_s"] = comm_json(s.exposed_comm_s);
  sj["idle_s"] = s.idle_s;
  sj["peak_memory_bytes"] = std::llround(s.peak_memory_bytes);
  sj["peak_unfragmented_bytes"] = std::llround(s.peak_unfragmented_bytes);
  sj["peak_allocated_bytes"] = std::llround(s.peak_allocated_bytes);
  sj["memory"] = memory_json(s.memory);
  sj["collectives"] = collectives_json(s.collectives);
  return sj;
}

J diagnostics_json(const std::vector<Diagnostic>& ds) {
  J out = J::array();
  for (const auto& d : ds) {
    J dj{{"id", d.id}, {"severity", to_string(d.severity)}};
    dj["stage"] = d.stage ? J(*d.stage) : J(nullptr);
    dj["message"] = d.message;
    dj["fix"] = d.fix;
    out.push_back(std::move(dj));
  }
  return out;
}

J kernels_json(const std::vector<KernelRecord>& ks) {
  J out = J::array();
  for (const auto& k : ks) {
    out.push_back(J{{"stage", k.stage},
                    {"pass", k.pass},
                    {"name", k.name},
                    {"kind", k.kind},
                    {"shape", k.shape},
                    {"count", k.count},
                    {"flops", k.flops},
                    {"bytes", std::llround(k.bytes)},
                    {"seconds", k.seconds},
                    {"source", k.source}});
  }
  return out;
}

J provenance_json(const Provenance& p) {
  J prov;
  prov["trainsim_version"] = p.trainsim_version;
  prov["engine"] = p.engine;
  prov["replayed_gpus"] = p.replayed_gpus;
  if (!p.why_full_replay.empty()) prov["why_full_replay"] = p.why_full_replay;
  J inputs = J::array();
  for (const auto& in : p.inputs) {
    inputs.push_back(J{{"role", in.role}, {"name", in.name}, {"sha256", in.sha256}});
  }
  prov["inputs"] = std::move(inputs);
  J share;
  for (TimeSource source : kTimeSources) {
    const char* src = to_string(source);
    share[src] = p.kernel_time_share.at(src);
  }
  prov["kernel_time_share"] = std::move(share);
  prov["kernels"] = kernels_json(p.kernels);
  return prov;
}

J failures_json(const FailureCost& f) {
  J j;
  j["gpu_mtbf_hours"] = f.gpu_mtbf_hours;
  j["job_mtbf_s"] = f.job_mtbf_s();
  j["checkpoint_s"] = f.checkpoint_s;
  j["restart_s"] = f.restart_s;
  j["finishes"] = f.finishes;
  if (!f.finishes) return j;
  j["checkpoint_interval_steps"] = f.interval_steps;
  j["checkpoint_interval_s"] = f.interval_s;
  j["seconds"] = f.seconds;
  j["days"] = f.days();
  j["failures"] = f.failures;
  j["lost_fraction"] = f.lost;
  j["gpu_hours"] = f.gpu_hours;
  if (f.cost) j["cost"] = *f.cost;
  return j;
}

J time_to_train_json(const TimeToTrain& t) {
  J j;
  j["tokens"] = t.tokens;
  j["tokens_per_step"] = t.tokens_per_step;
  j["steps"] = t.steps;
  j["seconds"] = t.seconds;
  j["p10_s"] = t.p10_s;
  j["p90_s"] = t.p90_s;
  j["days"] = t.days();
  j["gpu_hours"] = t.gpu_hours;
  if (t.cost) j["cost"] = *t.cost;
  if (t.failures) j["failures"] = failures_json(*t.failures);
  return j;
}

}  // namespace

std::string report_json(const Report& r) {
  J j;
  j["schema_version"] = r.schema_version;
  if (!r.scenario.empty()) j["scenario"] = r.scenario;
  j["model"] = r.model;
  j["platform"] = r.platform;
  j["plan"] = plan_json(r.plan);
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["microbatches"] = r.microbatches;
  j["padded_vocab"] = r.padded_vocab;
  j["model_params"] = r.model_params;
  j["model_active_params"] = r.model_active_params;
  j["mtp_num_layers"] = r.mtp_layers;
  j["mtp_params"] = r.mtp_params;
  j["step_time_s"] = r.step_time_s;
  j["step_time_p10_s"] = r.step_time_p10_s;
  j["step_time_p90_s"] = r.step_time_p90_s;
  j["step_time_band"] = r.band_weighted ? "residuals x kernel spread" : "residuals";
  j["kernel_spread"] = r.kernel_spread;
  if (!r.published.figures.empty()) j["published"] = published_json(r);
  j["tokens_per_s"] = r.tokens_per_s;
  if (r.time_to_train) j["time_to_train"] = time_to_train_json(*r.time_to_train);
  j["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["bubble_fraction"] = r.bubble_fraction;
  j["compute_s"] = r.compute_s;
  j["exposed_comm_s"] = comm_json(r.exposed_comm_s);
  j["overlapped_comm_s"] = comm_json(r.overlapped_comm_s);
  J stages = J::array();
  for (const auto& s : r.stages) stages.push_back(stage_json(s));
  j["stages"] = std::move(stages);
  j["diagnostics"] = diagnostics_json(r.diagnostics);
  j["provenance"] = provenance_json(r.provenance);
  return j.dump(2) + "\n";
}

}  // namespace trainsim
