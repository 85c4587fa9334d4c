#include "sim/report/report.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

#include "sim/core/version.hpp"
#include "sim/cost/step_flops.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/layout.hpp"

namespace trainsim {

bool Report::has_errors() const {
  for (const auto& d : diagnostics) {
    if (d.severity == Severity::kError) return true;
  }
  return false;
}

const StageReport& Report::largest_allocation() const {
  assert(!stages.empty());
  return *std::max_element(stages.begin(), stages.end(), [](const auto& a, const auto& b) {
    return a.peak_allocated_bytes < b.peak_allocated_bytes;
  });
}

std::int64_t PublishedComparison::step_figures() const {
  return std::count_if(figures.begin(), figures.end(),
                       [](const auto& f) { return f.gives_step(); });
}

std::int64_t PublishedComparison::memory_figures() const {
  return std::count_if(figures.begin(), figures.end(),
                       [](const auto& f) { return f.gives_memory(); });
}

namespace {

void record_kernels(Provenance& prov, std::int64_t stage, const char* pass, const PassCost& cost,
                    double launches_per_step, std::map<std::string, double>& time_by_source) {
  for (const auto& k : cost.kernels) {
    prov.kernels.push_back({stage, pass, k.name, to_string(k.kind), shape_label(k.shape), k.count,
                            k.flops, k.bytes, k.time.seconds, to_string(k.time.source)});
    time_by_source[to_string(k.time.source)] +=
        k.time.seconds * static_cast<double>(k.count) * launches_per_step;
  }
}

// The run's identity and its whole-step figures: counts, throughput, the band around the step.
void fill_headline(Report& r, const ReportInputs& in) {
  r.schema_version = kReportSchemaVersion;
  r.scenario = in.scenario;
  r.model = in.model.name;
  r.platform = in.platform.name;
  r.plan = in.plan;
  r.partition = in.partition.method;
  r.gpus = in.plan.world_size();
  r.nodes = (r.gpus + in.platform.node.gpus_per_node - 1) / in.platform.node.gpus_per_node;
  r.microbatches = in.plan.num_microbatches();
  r.padded_vocab = in.costs.padded_vocab;
  r.model_params = total_params(in.model);
  r.model_active_params = in.model.moe.is_moe() ? active_params(in.model) : r.model_params;
  r.mtp_layers = in.model.mtp_layers;
  r.mtp_params = r.mtp_layers * mtp_module_params(in.model);

  const double step = in.sim.step_time_s;
  r.step_time_s = step;
  const ResidualBand& band = in.platform.calibration.band;
  r.kernel_spread = kernel_spread(in.costs).width();
  r.band_weighted = band.weighted() && r.kernel_spread > 0;
  r.step_time_p10_s = band.low(step, r.kernel_spread);
  r.step_time_p90_s = band.high(step, r.kernel_spread);
  r.published = in.published;
  // A plan that drops layers (an error diagnostic says so) runs fewer FLOPs than the model has.
  const StepRates rates =
      step_rates(built_model(in.model, in.partition), in.platform, in.plan, step);
  r.tokens_per_s = rates.tokens_per_s;
  r.time_to_train = time_to_train(in.budget, static_cast<double>(in.plan.tokens_per_step()), step,
                                  r.step_time_p10_s, r.step_time_p90_s, r.gpus);
  r.model_tflops_per_gpu = rates.model_flops_per_gpu / 1e12;
  r.mfu = rates.mfu;
}

// Each GPU's replayed time, summed into its stage (idle and exposed communication still totals
// over the stage's GPUs) and averaged into the step's; returns the GPUs in each stage.
std::vector<std::int64_t> sum_gpu_times(Report& r, const ReportInputs& in, const Layout& layout) {
  const double step = in.sim.step_time_s, gpus = static_cast<double>(r.gpus);
  std::vector<std::int64_t> gpus_in_stage(static_cast<std::size_t>(in.plan.pp), 0);
  r.stages.resize(static_cast<std::size_t>(in.plan.pp));
  double idle_total = 0;
  for (std::int64_t rank = 0; rank < r.gpus; ++rank) {
    const auto& st = in.sim.gpu_stats(rank);
    const auto s = layout.coord(rank, Dim::kPP);
    auto& sr = r.stages[static_cast<std::size_t>(s)];
    // A GPU busy the whole step leaves a rounding residue (-7e-16 s), not idle time.
    double idle = step - st.compute_s - st.comm_total();
    if (std::abs(idle) < 1e-12 * step) idle = 0;
    idle_total += idle;
    sr.idle_s += idle;
    for (std::size_t k = 0; k < kNumCommKinds; ++k) {
      sr.exposed_comm_s[k] += st.comm_s[k];
      r.exposed_comm_s[k] += st.comm_s[k] / gpus;
      r.overlapped_comm_s[k] += st.comm_hidden_s[k] / gpus;
    }
    r.compute_s += st.compute_s / gpus;
    sr.compute_s = st.compute_s;
    gpus_in_stage[static_cast<std::size_t>(s)]++;
  }
  // Idle time summed over spans can come out a rounding error below zero: no bubble.
  r.bubble_fraction = std::max(0.0, idle_total / gpus / step);
  return gpus_in_stage;
}

// Per stage, the GPU whose collectives take longest in a step, the first such (the stage's leader
// where all are alike): the report lists its collectives, so that a group spanning nodes for some
// of the stage's GPUs only (TP 3 on 8-GPU nodes) shows as the step waits for it.
std::vector<std::int64_t> slowest_collectives_gpus(const ReportInputs& in, const Layout& layout) {
  std::vector<double> by_rank;  // each replayed rank's collective seconds
  for (const auto& rank : in.sim.collectives) {
    double t = 0;
    for (const auto& c : rank) t += c.seconds;
    by_rank.push_back(t);
  }
  std::vector<std::int64_t> gpu(static_cast<std::size_t>(in.plan.pp), -1);
  std::vector<double> seconds(gpu.size(), -1);
  for (std::int64_t g = 0; g < in.sim.num_gpus(); ++g) {
    const auto rank = static_cast<std::size_t>(in.sim.rank_of(g));
    if (rank >= by_rank.size()) continue;
    const auto s = static_cast<std::size_t>(layout.coord(g, Dim::kPP));
    if (by_rank[rank] > seconds[s] * (1 + 1e-9)) seconds[s] = by_rank[rank], gpu[s] = g;
  }
  return gpu;
}

// Stage sr's chunks: their blocks, parameters and pass times, their kernels into the provenance.
void add_chunks(Report& r, StageReport& sr, const ReportInputs& in,
                std::map<std::string, double>& time_by_source) {
  const double m = static_cast<double>(r.microbatches);
  const auto chunks = in.partition.chunks;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const auto v = c * in.plan.pp + sr.index;  // the virtual stage of chunk c
    const auto& cost = in.costs.stages[static_cast<std::size_t>(v)];
    if (chunks > 1) sr.virtual_stages.push_back(v);
    sr.chunks.push_back(in.partition.labels(v));
    sr.layers += in.partition.decoders(v);
    sr.params += cost.params;
    sr.params_per_gpu += cost.params_per_gpu;
    sr.forward_s += cost.forward.seconds;
    sr.backward_s += cost.backward.seconds;
    sr.recompute_s += cost.recompute.seconds;
    sr.wait_s += cost.forward.overlap_stall() + cost.backward.overlap_stall() +
                 cost.recompute.overlap_stall();
    record_kernels(r.provenance, v, "forward", cost.forward, m, time_by_source);
    record_kernels(r.provenance, v, "backward", cost.backward, m, time_by_source);
    record_kernels(r.provenance, v, "recompute", cost.recompute, m, time_by_source);
    record_kernels(r.provenance, v, "optimizer", cost.optimizer, 1.0, time_by_source);
  }
}

void fill_provenance(Report& r, const ReportInputs& in,
                     const std::map<std::string, double>& time_by_source) {
  double total = 0;
  for (const auto& [_, t] : time_by_source) total += t;
  for (TimeSource source : kTimeSources) {
    const char* src = to_string(source);
    const auto it = time_by_source.find(src);
    r.provenance.kernel_time_share[src] =
        total > 0 && it != time_by_source.end() ? it->second / total : 0.0;
  }
  r.provenance.trainsim_version = std::string(version());
  r.provenance.engine = to_string(in.sim.engine);
  // Programs replayed: one per GPU, or one per class of GPUs.
  r.provenance.replayed_gpus =
      in.sim.ranks.empty() ? r.gpus : static_cast<std::int64_t>(in.sim.ranks.size());
  if (r.provenance.replayed_gpus == r.gpus) r.provenance.why_full_replay = in.why_full_replay;
  r.provenance.inputs = in.inputs;
}

}  // namespace

const StageReport* stage_waiting_most(const Report& report) {
  const StageReport* most = nullptr;
  for (const auto& s : report.stages) {
    if (s.wait_s > 0 && (!most || s.wait_s > most->wait_s)) most = &s;
  }
  return most;
}

Report make_report(const ReportInputs& in) {
  Report r;
  fill_headline(r, in);
  const Layout layout(in.plan);
  const auto gpus_in_stage = sum_gpu_times(r, in, layout);
  const MemoryModel memory = compute_memory(in.model, in.platform, in.plan, in.partition, in.costs);
  std::map<std::string, double> time_by_source;
  const auto shown = slowest_collectives_gpus(in, layout);
  for (std::int64_t s = 0; s < in.plan.pp; ++s) {
    auto& sr = r.stages[static_cast<std::size_t>(s)];
    const double n = static_cast<double>(gpus_in_stage[static_cast<std::size_t>(s)]);
    sr.index = s;
    add_chunks(r, sr, in, time_by_source);
    sr.idle_s /= n;
    for (auto& c : sr.exposed_comm_s) c /= n;
    const StageMemory& sm = memory.stages[static_cast<std::size_t>(s)];
    sr.peak_memory_bytes = sm.peak_bytes;
    sr.peak_unfragmented_bytes = sm.peak_unfragmented_bytes;
    sr.peak_allocated_bytes = sm.peak_allocated;
    sr.memory = {sm.state.weights,     sm.state.gradients,        sm.state.master_weights,
                 sm.state.optimizer,   sm.activations_at_peak(),  sm.timeline.peak_in_flight,
                 sm.runtime_at_peak(), sm.timeline.peak_deferred, sm.timeline.peak_deferrals};
    if (const auto g = shown[static_cast<std::size_t>(s)]; g >= 0) {
      sr.collectives = in.sim.collectives[static_cast<std::size_t>(in.sim.rank_of(g))];
    }
  }
  fill_provenance(r, in, time_by_source);
  r.diagnostics = in.diagnostics;
  return r;
}

}  // namespace trainsim
