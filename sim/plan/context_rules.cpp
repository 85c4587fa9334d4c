#include "sim/plan/context_rules.hpp"

#include <string>
#include <utility>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

// a2a+p2p's level sizes (Megatron-LM: --hierarchical-context-parallel-sizes, whose product is
// cp): an a2a level of cp_a2a_size ranks, strictly between 1 and cp (either end is a2a or p2p
// alone), dividing cp.
void validate_hierarchy(const Plan& plan, const PlanOrigin& origin) {
  const bool hierarchical = plan.cp_comm == CpComm::kA2AP2P;
  if (!hierarchical) {
    if (plan.cp_a2a_size != 0) {
      fail_input(origin.of("cp_a2a_size"),
                 "sets the a2a level of hierarchical context parallelism, so it needs " +
                     origin.name("cp_comm_type") + " a2a+p2p (got " + to_string(plan.cp_comm) +
                     ")");
    }
    return;
  }
  const std::int64_t a = plan.cp_a2a_size;
  if (a == 0) {
    fail_input(origin.of("cp_comm_type"),
               "a2a+p2p needs the size of its a2a level, " + origin.name("cp_a2a_size") +
                   " A (Megatron-LM's --hierarchical-context-parallel-sizes A cp/A): a divisor "
                   "of " +
                   origin.name("cp") + " " + std::to_string(plan.cp) +
                   " between 2 and cp / 2, usually the CP ranks on one node");
  }
  if (a < 2 || a >= plan.cp || plan.cp % a != 0) {
    fail_input(origin.of("cp_a2a_size"),
               "must divide " + origin.name("cp") + " " + std::to_string(plan.cp) +
                   " and lie between 2 and cp / 2, got " + std::to_string(a) +
                   " (an a2a level of 1 is p2p, one of cp is a2a: use that " +
                   origin.name("cp_comm_type") + ")");
  }
}

}  // namespace

void validate_packing(const Plan& plan, const PlanOrigin& origin) {
  if (plan.packed_document_tokens > plan.seq_len) {
    fail_input(origin.of("packed_document_tokens"),
               "must be at most " + origin.name("seq_len") + " " + std::to_string(plan.seq_len) +
                   " (the documents are packed into each sequence), got " +
                   std::to_string(plan.packed_document_tokens));
  }
  if (!plan.packs_documents()) return;
  if (plan.cp > 1 && plan.cp_comm != CpComm::kP2P) {
    fail_input(origin.of("packed_document_tokens"),
               "packed documents under context parallelism are modelled on the p2p ring only "
               "(Transformer Engine's ring over each document's 2 x cp chunks): use " +
                   origin.name("cp_comm_type") + " p2p or " + origin.name("cp") + " 1");
  }
  if (plan.attention_backend == AttentionBackend::kUnfused) {
    fail_input(origin.of("packed_document_tokens"),
               "packed documents need Transformer Engine's fused attention (Megatron-Core's "
               "unfused attention takes no packed sequences): use " +
                   origin.name("attention_backend") + " flash or flash-attn2");
  }
}

void validate_context_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  validate_hierarchy(plan, origin);
  if (plan.cp == 1) return;
  // Causal load balance: the sequence in 2 x cp chunks, each rank the i-th and the mirrored one;
  // with sequence parallelism each chunk pair is split again over TP.
  const bool sp = plan.sequence_parallel();
  const std::int64_t chunks = 2 * plan.cp * (sp ? plan.tp : 1);
  if (plan.seq_len % chunks != 0) {
    fail_input(origin.of("seq_len"),
               "must be divisible by 2 x cp" + std::string(sp ? " x tp" : "") + " = " +
                   std::to_string(chunks) + " with " + origin.name("cp") + " " +
                   std::to_string(plan.cp) +
                   " (the sequence is cut in 2 x cp chunks for causal load balance), got " +
                   std::to_string(plan.seq_len));
  }
  if (plan.attention_backend == AttentionBackend::kUnfused) {
    fail_input(origin.of("attention_backend"),
               "context parallelism runs in Transformer Engine's fused attention; use flash");
  }
  if ((plan.cp_comm == CpComm::kP2P || plan.cp_comm == CpComm::kA2AP2P) &&
      model.local_attention.kind == LocalAttention::Kind::kSliding) {
    fail_input(origin.of("cp_comm_type"),
               "Transformer Engine runs sliding-window attention under context parallelism only "
               "with a2a or allgather (got " +
                   std::string(to_string(plan.cp_comm)) + ")");
  }
  if (plan.cp_head_split() == 1) return;
  const bool whole = plan.cp_comm == CpComm::kA2A;
  const std::int64_t split = plan.tp * plan.cp_head_split();
  for (const auto& [what, heads] : {std::pair{"attention heads", model.num_attention_heads},
                                    std::pair{"KV heads", model.num_kv_heads}}) {
    if (heads % split == 0) continue;
    fail_input(whole ? origin.of("cp_comm_type") : origin.of("cp_a2a_size"),
               std::string(to_string(plan.cp_comm)) + " splits the heads over " +
                   (whole ? "tp x cp = " : "tp x cp_a2a_size = ") + std::to_string(split) +
                   ", which must divide the " + what + " (" + std::to_string(heads) +
                   (whole ? "); use p2p or a smaller " + origin.name("cp")
                          : "); use a smaller a2a level or p2p"));
  }
}

}  // namespace trainsim
