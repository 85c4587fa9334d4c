#pragma once
// One result struct for a simulated plan, serialised in one place (JSON and text).
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/diagnostic.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/engine/engine.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/report/time_to_train.hpp"

namespace trainsim {

/// One physical pipeline stage; with interleaving it holds vp model chunks (virtual stages
/// stage, stage + pp, ...), whose figures are summed here.
struct StageReport {
  std::int64_t index = 0;
  std::vector<std::int64_t> virtual_stages;      // with interleaving only
  std::vector<std::vector<std::string>> chunks;  // blocks of each chunk (one without interleaving)
  std::int64_t layers = 0;
  std::int64_t params = 0;
  std::int64_t params_per_gpu = 0;
  double forward_s = 0;    // one micro-batch through all the stage's chunks
  double backward_s = 0;   // one micro-batch
  double recompute_s = 0;  // one micro-batch (--recompute)
  /// The part of the three above that is the passes' wait for calls beside their kernels (TP
  /// userbuffers, a CP ring, overlapped all-to-alls) where those outlast the kernels.
  double wait_s = 0;
  double compute_s = 0;  // a GPU of the stage, whole step: its kernels, without those waits
  std::array<double, kNumCommKinds> exposed_comm_s{};  // mean over the stage's GPUs
  double idle_s = 0;                                   // mean over the stage's GPUs
  double peak_memory_bytes = 0;        // device memory per GPU at the stage's peak (sim/memory)
  double peak_unfragmented_bytes = 0;  // the same peak without the assumed fragmentation
  /// What torch.cuda.max_memory_allocated would report on a GPU of the stage (StageMemory).
  double peak_allocated_bytes = 0;
  /// The collectives a GPU of the stage runs in a step, NCCL's algorithm and closed-form time: the
  /// GPU whose collectives take longest (the first such).
  std::vector<CollectiveStat> collectives;
  /// What the peak is made of, per GPU: model state, what the activations add at the peak, and
  /// the runtime terms (allocator buffers, fragmentation, memory outside the allocator).
  struct Memory {
    double weights = 0;
    double gradients = 0;
    double master_weights = 0;
    double optimizer = 0;
    double activations = 0;
    std::int64_t microbatches_in_flight = 0;  // micro-batch chunks held at the peak
    double runtime = 0;
    /// Of `activations`, the LM-head buffers deferring backwards keep for the flush
    /// (--defer-embedding-wgrad-compute), and how many micro-batches' they are.
    double deferred_lm_head = 0;
    std::int64_t deferred_microbatches = 0;
  } memory;
};

struct KernelRecord {
  std::int64_t stage = 0;
  std::string pass;  // forward, backward, optimizer
  std::string name;
  std::string kind;
  std::string shape;  // what the kernel-timing database was searched for
  std::int64_t count = 0;
  double flops = 0;
  double bytes = 0;
  double seconds = 0;  // per launch
  std::string source;
};

struct InputRecord {
  std::string role;  // model, platform, scenario
  std::string name;
  std::string sha256;
};

struct Provenance {
  std::string trainsim_version;
  std::string engine;
  std::int64_t replayed_gpus = 0;  // the GPUs whose programs were replayed (symmetric: a few)
  std::string why_full_replay;     // when every GPU was: why, or empty
  std::vector<InputRecord> inputs;
  std::map<std::string, double> kernel_time_share;  // source -> share of the step's compute
  std::vector<KernelRecord> kernels;
};

/// A figure measured on a scenario's recipe and published, shown beside the prediction: its step
/// time (given as such, or as tokens/s per GPU) and the largest memory a GPU of it allocated,
/// either or both.
struct PublishedFigure {
  /// The step time: as given, or the tokens/s per GPU given as the recipe's step time (its tokens
  /// per step over GPUs x tokens/s per GPU); 0 where the figure gives neither, or gives tokens/s
  /// while flags change the plan (it is not compared then).
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;  // as given; 0 where the figure gives a step time or none
  /// torch.cuda.max_memory_allocated, the largest over the run's GPUs; 0 where not given.
  double max_allocated_bytes = 0;
  std::string source;  // who measured it and where it was published
  bool gives_step() const { return step_time_s > 0 || tokens_per_s_per_gpu > 0; }
  bool gives_memory() const { return max_allocated_bytes > 0; }
  /// A prediction's signed error against the step time: predicted / published - 1.
  double error_of(double predicted) const { return predicted / step_time_s - 1.0; }
  /// A predicted peak's signed error against the memory figure.
  double memory_error_of(double predicted) const { return predicted / max_allocated_bytes - 1.0; }
};

/// A scenario's published figures as a report shows them: compared with the prediction when
/// the run is the scenario's recipe, or the reason they are not (flags changed the recipe).
struct PublishedComparison {
  std::vector<PublishedFigure> figures;
  std::string not_compared;  // e.g. "--tp changes the recipe"; empty when compared
  std::int64_t step_figures() const;
  std::int64_t memory_figures() const;
};

struct Report {
  int schema_version = 0;
  std::string scenario;
  std::string model;
  std::string platform;
  Plan plan;
  std::string partition;
  std::int64_t gpus = 0;
  std::int64_t nodes = 0;
  std::int64_t microbatches = 0;
  std::int64_t padded_vocab = 0;
  std::int64_t model_params = 0;
  std::int64_t model_active_params = 0;  // a token passes through (MoE); model_params if dense
  /// Multi-token-prediction modules trained (beyond model_params), and their own parameters.
  std::int64_t mtp_layers = 0;
  std::int64_t mtp_params = 0;

  double step_time_s = 0;
  /// The band the platform's calibration gives a prediction (ResidualBand: 80 % of measured
  /// steps expected inside; equal to step_time_s without a calibration).
  double step_time_p10_s = 0;
  double step_time_p90_s = 0;
  /// The P10-P90 width of the plan's kernels in the kernel database (kernel_spread()), which
  /// scales the band where the calibration fitted its locally weighted form; 0 without one.
  double kernel_spread = 0;
  bool band_weighted = false;  // the band is the locally weighted one
  PublishedComparison published;
  double tokens_per_s = 0;
  /// The budget's tokens at this step time (and its price); none where no tokens are given.
  std::optional<TimeToTrain> time_to_train;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double bubble_fraction = 0;
  /// What the idle share is called: the pipeline bubble, or at pp 1, with no pipeline, the waits
  /// on other GPUs (an expert-parallel group's busiest GPU, a skewed stage).
  const char* idle_name() const { return plan.pp > 1 ? "pipeline bubble" : "idle"; }
  std::array<double, kNumCommKinds> exposed_comm_s{};     // mean over GPUs
  std::array<double, kNumCommKinds> overlapped_comm_s{};  // hidden behind compute, mean
  double compute_s = 0;                                   // mean busy compute time per GPU
  std::vector<StageReport> stages;
  std::vector<Diagnostic> diagnostics;
  Provenance provenance;

  bool has_errors() const;
  /// The stage whose GPUs allocate the most at their peak (the first such): what a measured
  /// max_memory_allocated, the largest over the run's GPUs, is compared with.
  const StageReport& largest_allocation() const;
};

struct ReportInputs {
  const Model& model;
  const Platform& platform;
  const Plan& plan;
  const Partition& partition;
  const CostModel& costs;
  const SimResult& sim;
  std::string scenario;  // name, or empty
  std::vector<InputRecord> inputs;
  std::vector<Diagnostic> diagnostics;
  std::string why_full_replay;  // why every GPU was replayed, or empty
  PublishedComparison published;
  TrainingBudget budget;  // --tokens and --price-per-gpu-hour, or none
};

Report make_report(const ReportInputs& in);

/// The stage whose passes wait longest for the calls beside their kernels (the first of equals),
/// or null where no pass waits.
const StageReport* stage_waiting_most(const Report& report);

std::string report_json(const Report& report);
std::string report_text(const Report& report);

}  // namespace trainsim
