#include "sim/cost/stage_cost.hpp"

#include "sim/platform/kernel_db.hpp"

#include "sim/model/params.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

namespace {

// Parameters of one decoder layer held by each TP rank: sharded projections, replicated norms.
std::int64_t layer_params_per_rank(const Model& m, const ParamCount& c, std::int64_t tp) {
  std::int64_t replicated = c.layer_norms;
  if (m.attention_output_bias) replicated += m.hidden_size;
  if (m.mlp_bias) replicated += m.hidden_size * (m.moe.is_moe() ? m.moe.num_experts : 1);
  if (m.moe.is_moe()) replicated += m.hidden_size * m.moe.num_experts;  // router
  return (c.layer() - replicated) / tp + replicated;
}

void add_pass(PassCost& pass, const std::string& prefix, const BlockPass& block, std::int64_t count,
              const Platform& platform, Precision precision) {
  for (const auto& k : block.kernels) {
    KernelCost kc;
    kc.name = prefix + "." + k.name;
    kc.kind = k.kind;
    kc.count = count;
    kc.flops = k.flops;
    kc.bytes = k.bytes;
    kc.shape = k.shape;
    kc.time = kernel_time(platform, precision, k);
    pass.seconds += kc.time.seconds * static_cast<double>(count);
    pass.kernels.push_back(std::move(kc));
  }
  pass.tp_allreduce.bytes += block.tp_allreduce.bytes * static_cast<double>(count);
  pass.tp_allreduce.count += block.tp_allreduce.count * count;
}

}  // namespace

KernelTime kernel_time(const Platform& platform, Precision precision, const KernelSpec& kernel) {
  if (platform.kernel_db) {
    if (auto hit = platform.kernel_db->lookup(kernel.shape)) {
      TimeSource source = hit->exact ? TimeSource::kMeasured : TimeSource::kInterpolated;
      if (platform.kernel_db->kind() == KernelDbKind::kPublished) source = TimeSource::kPublished;
      return {hit->seconds, source};
    }
  }
  return roofline_time(platform, precision, kernel.kind, kernel.flops, kernel.bytes);
}

CostModel compute_costs(const Model& model, const Platform& platform, const Plan& plan,
                        const Partition& partition) {
  CostModel cm;
  cm.padded_vocab = megatron_padded_vocab(model.vocab_size, plan.vocab_divisible_by, plan.tp);
  const LayerShape shape = layer_shape(model, plan, cm.padded_vocab);
  const ParamCount pc = count_params(model);
  const std::int64_t layer_rank = layer_params_per_rank(model, pc, plan.tp);
  const std::int64_t vocab_rows = cm.padded_vocab / plan.tp;

  for (std::int64_t s = 0; s < partition.num_stages(); ++s) {
    StageCost sc;
    const auto decoders = partition.decoders(s);
    // Blocks run in model order; decoder kernels are costed once and repeated per layer.
    bool decoders_added = false;
    const auto& range = partition.stages[static_cast<std::size_t>(s)];
    for (auto i = range.begin; i < range.end; ++i) {
      const auto kind = partition.blocks[static_cast<std::size_t>(i)].kind;
      if (kind == BlockKind::kDecoder) {
        if (decoders_added) continue;
        decoders_added = true;
      }
      const std::int64_t count = kind == BlockKind::kDecoder ? decoders : 1;
      const char* prefix = to_string(kind);
      add_pass(sc.forward, prefix, block_pass(kind, false, shape), count, platform, plan.precision);
      add_pass(sc.backward, prefix, block_pass(kind, true, shape), count, platform, plan.precision);
      switch (kind) {
        case BlockKind::kEmbedding:
          sc.params += pc.embedding();
          sc.params_per_gpu += vocab_rows * model.hidden_size + pc.position_embedding;
          break;
        case BlockKind::kDecoder:
          sc.params += pc.layer() * decoders;
          sc.params_per_gpu += layer_rank * decoders;
          break;
        case BlockKind::kFinalNorm:
          sc.params += pc.final_norm;
          sc.params_per_gpu += pc.final_norm;
          break;
        case BlockKind::kLmHead:
          sc.params += pc.lm_head;
          // A tied LM head reuses the embedding; on another stage it is a synchronised copy.
          if (!model.tied_embeddings || !partition.holds(s, BlockKind::kEmbedding)) {
            sc.params_per_gpu += vocab_rows * model.hidden_size;
          }
          break;
        case BlockKind::kLoss:
          break;
      }
    }
    sc.p2p_bytes = shape.tokens * shape.hidden * shape.act_bytes;
    sc.grad_bytes = static_cast<double>(sc.params_per_gpu) * kGradReduceBytes;
    BlockPass opt;
    opt.kernels.push_back(optimizer_kernel("grad_norm", "grad_norm", sc.params_per_gpu));
    opt.kernels.push_back(optimizer_kernel("adam", "adam", sc.params_per_gpu));
    add_pass(sc.optimizer, "optimizer", opt, 1, platform, plan.precision);
    cm.stages.push_back(std::move(sc));
  }
  return cm;
}

}  // namespace trainsim
