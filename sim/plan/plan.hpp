#pragma once
// The parallel strategy: pure data plus the feasibility rules. Names follow Megatron-LM.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

enum class Precision { kBF16, kFP8 };
enum class ScheduleKind { kGPipe, k1F1B, kInterleaved, kZBH1 };
enum class Recompute { kNone, kSelective, kFull };

const char* to_string(Precision p);
const char* to_string(ScheduleKind s);
const char* to_string(Recompute r);

struct Plan {
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t dp = 1;
  std::int64_t cp = 1;
  std::int64_t ep = 1;
  std::int64_t vp = 1;
  bool sp = false;
  std::int64_t mbs = 1;
  std::int64_t gbs = 0;  // 0: one micro-batch per data-parallel rank (mbs * dp)
  std::int64_t seq_len = 0;
  Precision precision = Precision::kBF16;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  std::string partition = "uniform";
  Recompute recompute = Recompute::kNone;
  std::int64_t zero = 0;
  std::int64_t vocab_divisible_by = 128;  // Megatron's --make-vocab-size-divisible-by
  std::int64_t gpus = 0;                  // 0: as many as the plan needs

  std::int64_t world_size() const { return tp * pp * dp * cp; }
  std::int64_t global_batch() const { return gbs > 0 ? gbs : mbs * dp; }
  std::int64_t num_microbatches() const { return global_batch() / (mbs * dp); }
};

/// Where each plan field was set ("--tp" or "scenarios/x.json: $.plan.tp"), so feasibility errors
/// name what the user wrote. Fields not present default to their flag.
struct PlanOrigin {
  std::map<std::string, std::string> where;
  std::string of(const std::string& field) const;
};

/// Feasibility rules of the plan for this model and platform. Throws InputError naming the flag
/// or JSON path at fault and what would be valid.
void validate_plan(const Plan& plan, const Model& model, const Platform& platform,
                   const PlanOrigin& origin);

}  // namespace trainsim
