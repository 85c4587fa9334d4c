#pragma once
// The space of plans a fix may propose. Every candidate is validated, partitioned and simulated
// (analytic engine, symmetric replay where the layout allows it) at most once per PlanSpace, and
// a candidate no framework would run is a value, infeasible with its one-line reason, never an
// exception.
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

struct Candidate {
  Plan plan;
  /// Priced on trainsim's balanced partition rather than the one the plan's --partition builds.
  bool balanced = false;

  /// Every plan field and the partition choice: what a PlanSpace caches a candidate by.
  auto operator<=>(const Candidate&) const = default;
};

/// A candidate simulated.
struct Priced {
  Plan plan;
  Partition partition;
  double step_time_s = 0;
  double tokens_per_s = 0;
  /// Its worst stage's peak memory per GPU, where the question was whether it fits.
  std::optional<double> peak_bytes;
};

/// What became of a candidate: priced, or infeasible with a one-line reason.
class Outcome {
 public:
  explicit Outcome(Priced priced) : priced_(std::move(priced)) {}
  static Outcome infeasible(std::string reason);

  bool feasible() const { return priced_.has_value(); }
  explicit operator bool() const { return feasible(); }
  const Priced& operator*() const;
  const Priced* operator->() const { return &**this; }
  /// Why the candidate is infeasible; empty when it is feasible.
  const std::string& reason() const { return reason_; }

 private:
  Outcome() = default;
  std::optional<Priced> priced_;
  std::string reason_;
};

/// What a candidate must satisfy to be priced.
enum class Need {
  kBuildable,  // valid for the model and platform, its partition rule builds a partition
  kNoDefect,   // and that partition has no defect a framework stops on
  kFits,       // and every stage fits in the GPU's memory (the outcome carries its peak)
};

/// Simulates a plan on a partition and returns its step time in seconds. InputError where the
/// plan cannot be simulated.
using Simulator = std::function<double(const Plan&, const Partition&)>;

/// The analytic engine (evaluate()), without contention.
Simulator analytic_simulator(const Model& model, const Platform& platform);

class PlanSpace {
 public:
  /// `plan` on `partition` is the baseline every fix compares with: `baseline_step_s` where the
  /// caller has priced it already, else simulated on first use. `simulate` defaults to the
  /// analytic engine.
  PlanSpace(const Model& model, const Platform& platform, const Plan& plan,
            const Partition& partition, std::optional<double> baseline_step_s = std::nullopt,
            Simulator simulate = {});

  const Model& model() const { return model_; }
  const Platform& platform() const { return platform_; }
  /// The plan as given.
  const Plan& plan() const { return plan_; }
  const Partition& partition() const { return partition_; }

  /// The step time of the plan as given.
  double baseline();
  /// The candidate priced, or infeasible with the first requirement it fails. A candidate
  /// without --gbs runs the plan's global batch (plan_changes() names it where needed).
  Outcome price(const Candidate& candidate, Need need = Need::kBuildable);
  /// Where the candidate, as price() would run it, is valid, has no partition defect and fits in
  /// memory: a floor under its step time, its busiest pipeline stage's forward and backward
  /// kernels over every micro-batch (no recomputation, communication or bubble), which a simulator
  /// running each GPU's kernels one after another (the analytic engine, SimGrid) cannot beat;
  /// nullopt otherwise. Nothing is simulated.
  std::optional<double> fitting_step_floor(const Candidate& candidate);
  /// Calls of the simulator so far (the baseline included).
  std::int64_t simulations() const { return simulations_; }

 private:
  // A candidate validated and partitioned, with what is known of it so far.
  // The refusals are the InputError messages of the step that failed.
  struct Assessment {
    std::optional<std::string> refused;  // validation or partition rule
    std::optional<Partition> partition;
    std::optional<std::string> defect;
    std::optional<std::string> memory_refused;
    std::optional<double> peak_bytes;
    bool fits = false;
    double step_floor_s = 0;  // fitting_step_floor()
    std::optional<std::string> simulation_refused;
    std::optional<double> step_time_s;
  };

  /// The candidate with the options its own rules refuse dropped: distributed-optimizer
  /// instances, the deferred LM-head weight gradient.
  static Candidate with_valid_options(const Candidate& candidate);
  /// with_valid_options() and the plan's global batch where the candidate has none.
  Candidate as_priced(const Candidate& candidate) const;
  Assessment& assess(const Candidate& candidate);
  void measure_memory(const Plan& plan, Assessment& a);
  Outcome simulated(const Plan& plan, Assessment& a, std::optional<double> peak_bytes);

  const Model& model_;
  const Platform& platform_;
  const Plan& plan_;
  const Partition& partition_;
  std::optional<double> baseline_;
  Simulator simulate_;
  std::int64_t simulations_ = 0;
  std::map<Candidate, Assessment> assessed_;
};

}  // namespace trainsim
