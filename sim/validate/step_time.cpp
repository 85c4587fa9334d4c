#include "sim/validate/step_time.hpp"

#include <algorithm>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"

namespace trainsim {

Model megatron_default_gpt(const DefaultGpt& g, const std::string& name,
                           const std::string& source) {
  Model m;
  m.name = name;
  m.source = source;
  m.num_layers = g.layers;
  m.hidden_size = g.hidden;
  m.num_attention_heads = g.heads;
  m.num_kv_heads = g.heads;
  m.head_dim = g.hidden / g.heads;
  m.ffn_kind = FfnKind::kGelu;
  m.ffn_hidden_size = 4 * g.hidden;
  m.vocab_size = g.vocab;
  m.tied_embeddings = g.tied;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = g.max_positions;
  m.norm = NormKind::kLayerNorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  return m;
}

ValidationSet step_time_set(const std::filesystem::path& reference, const Platform& platform,
                            std::string metric) {
  ValidationSet set;
  set.quantity = Quantity::kStepTime;
  set.reference = reference.filename().string();
  set.metric = std::move(metric);
  set.platform = platform.name;
  set.band = platform.calibration.band;
  set.gpu_memory_bytes = platform.gpu.memory_bytes;
  return set;
}

void predict_step_time(ValidationRow& row, const std::function<Model()>& model, const Plan& plan,
                       const Platform& platform, EngineKind engine) {
  try {
    const Model m = model();
    validate_plan(plan, m, platform, {});
    const Evaluation e = evaluate(m, platform, plan, build_partition(m, platform, plan), engine);
    row.predicted = e.sim.step_time_s;
    row.kernel_spread = kernel_spread(e.costs).width();
    const MemoryModel memory = compute_memory(m, platform, plan, e.partition, e.costs);
    const StageMemory& worst = memory.stages[static_cast<std::size_t>(memory.worst_stage())];
    row.peak_bytes = worst.peak_bytes;
    row.peak_unfragmented_bytes = worst.peak_unfragmented_bytes;
    const auto largest = std::max_element(
        memory.stages.begin(), memory.stages.end(),
        [](const auto& a, const auto& b) { return a.peak_allocated < b.peak_allocated; });
    row.peak_allocated_bytes = largest->peak_allocated;
    row.largest_allocation_stage = largest - memory.stages.begin();
  } catch (const InputError& e) {
    row.skipped = std::string("not expressible: ") + e.what();
  }
}

}  // namespace trainsim
