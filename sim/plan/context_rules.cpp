#include "sim/plan/context_rules.hpp"

#include <string>
#include <utility>

#include "sim/core/error.hpp"

namespace trainsim {

void validate_context_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  if (plan.cp == 1) return;
  // Causal load balance: the sequence in 2 x cp chunks, each rank the i-th and the mirrored one;
  // with sequence parallelism each chunk pair is split again over TP.
  const std::int64_t chunks = 2 * plan.cp * (plan.sp ? plan.tp : 1);
  if (plan.seq_len % chunks != 0) {
    fail_input(origin.of("seq_len"),
               "must be divisible by 2 x cp" + std::string(plan.sp ? " x tp" : "") + " = " +
                   std::to_string(chunks) + " with " + origin.name("cp") + " " +
                   std::to_string(plan.cp) +
                   " (the sequence is cut in 2 x cp chunks for causal load balance), got " +
                   std::to_string(plan.seq_len));
  }
  if (plan.attention_backend == AttentionBackend::kUnfused) {
    fail_input(origin.of("attention_backend"),
               "context parallelism runs in Transformer Engine's fused attention; use flash");
  }
  if (plan.cp_comm == CpComm::kP2P &&
      model.local_attention.kind == LocalAttention::Kind::kSliding) {
    fail_input(origin.of("cp_comm_type"),
               "Transformer Engine runs sliding-window attention under context parallelism only "
               "with a2a or allgather (got p2p)");
  }
  if (plan.cp_comm == CpComm::kA2A) {
    for (const auto& [what, heads] : {std::pair{"attention heads", model.num_attention_heads},
                                      std::pair{"KV heads", model.num_kv_heads}}) {
      if (heads % (plan.tp * plan.cp) != 0) {
        fail_input(origin.of("cp_comm_type"),
                   "a2a splits the heads over tp x cp = " + std::to_string(plan.tp * plan.cp) +
                       ", which must "
                       "divide the " +
                       what + " (" + std::to_string(heads) + "); use p2p or a smaller " +
                       origin.name("cp"));
      }
    }
  }
}

}  // namespace trainsim
