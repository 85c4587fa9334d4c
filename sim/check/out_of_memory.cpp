// Out of memory: a stage whose peak per GPU exceeds the GPU's memory, broken down into model
// state, activations in flight and runtime overhead; a warning where the peak without the
// allocator's assumed fragmentation fits.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/check/detect.hpp"
#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/memory/memory.hpp"

namespace trainsim {

namespace {

// The deferred LM-head buffers among the activations at the peak, if any.
std::string deferred_part(const StageMemory& s) {
  const std::int64_t n = s.timeline.peak_deferrals;
  if (n == 0) return "";
  return " and " + format_bytes(s.timeline.peak_deferred) + " of LM-head buffers kept for " +
         std::to_string(n) + " deferred weight gradient" + (n == 1 ? "" : "s") +
         " (--defer-embedding-wgrad-compute)";
}

// What the stage holds at its peak: model state, activations in flight and runtime memory.
std::string peak_breakdown(const CheckContext& c, const StageMemory& s) {
  const ModelState& st = s.state;
  const std::int64_t in_flight = s.timeline.peak_in_flight;
  return "model state " + format_bytes(st.total()) + " (weights " + format_bytes(st.weights) +
         ", gradients " + format_bytes(st.gradients) + ", master weights " +
         format_bytes(st.master_weights) + ", Adam moments " + format_bytes(st.optimizer) +
         ", ZeRO " + std::to_string(c.plan.zero) + "), activations " +
         format_bytes(s.activations_at_peak()) + " with " + std::to_string(in_flight) +
         " micro-batch" + (in_flight == 1 ? "" : "es") + " in flight" + deferred_part(s) +
         " at its peak (compute step " + std::to_string(s.timeline.peak_step + 1) + " of " +
         std::to_string(static_cast<std::int64_t>(s.timeline.after_step.size())) + " of its " +
         to_string(c.plan.schedule) + " program), runtime " + format_bytes(s.runtime_at_peak()) +
         " (allocator buffers, fragmentation, CUDA context)";
}

// A peak that only the assumed fragmentation takes past the GPU: what the allocated peak leaves
// for the allocator's reserve.
std::string margin_note(const CheckContext& c, const StageMemory& s, double capacity) {
  const RuntimeMemory& runtime = c.platform.memory;
  const double room = (capacity - runtime.reserved) / s.peak_allocated - 1;
  return ". Without fragmentation it needs " + format_bytes(s.peak_unfragmented_bytes) +
         ": it fits if the caching allocator reserves under " + format_fixed(100 * room, 1) +
         " % above its allocated peak (trainsim assumes " +
         format_fixed(100 * runtime.fragmentation, 1) +
         " %: the platform's memory.fragmentation, not measured), so it may run, close to the "
         "limit";
}

}  // namespace

std::vector<Finding> find_out_of_memory(const CheckContext& context) {
  std::optional<MemoryModel> computed;
  const MemoryModel& mm = plan_memory(context, computed);
  if (mm.fits()) return {};
  const std::int64_t worst = mm.worst_stage();
  const StageMemory& s = mm.stages[static_cast<std::size_t>(worst)];
  std::vector<std::string> others;
  for (std::size_t i = 0; i < mm.stages.size(); ++i) {
    if (static_cast<std::int64_t>(i) != worst && mm.stages[i].peak_bytes > mm.capacity) {
      others.push_back(std::to_string(i));
    }
  }
  // An error where no allocator could fit the peak; where only the assumed fragmentation takes it
  // past the GPU, a warning: published recipes run there.
  const bool certain = !mm.fits_unfragmented();
  Diagnostic d;
  d.id = "oom";
  d.severity = certain ? Severity::kError : Severity::kWarning;
  d.stage = worst;
  d.message = "stage " + std::to_string(worst) + " needs " + format_bytes(s.peak_bytes) +
              " per GPU at its peak, more than the GPU's " + format_bytes(mm.capacity) + " (" +
              context.platform.gpu.name + "): " + peak_breakdown(context, s);
  if (!others.empty()) {
    d.message += "; stage" + std::string(others.size() > 1 ? "s " : " ") + and_list(others) +
                 " also exceed" + (others.size() > 1 ? "" : "s") + " it";
  }
  if (!certain) d.message += margin_note(context, s, mm.capacity);
  return {{std::move(d), FitInMemory{}}};
}

}  // namespace trainsim
