#include "sim/cost/attention_core.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

namespace {

// Flash attention of `seq` queries and keys (causal: over the unmasked half of the scores),
// `launches` times.
KernelSpec attention(std::string name, const LayerShape& s, AttentionPass pass, double seq,
                     bool causal, std::int64_t launches, std::int64_t head_split = 1) {
  KernelShape shape =
      AttentionShape{s.batch, whole(seq), s.heads / head_split, s.kv_heads / head_split, s.head_dim,
                     causal,  pass,       DType::kBF16};
  return {std::move(name), KernelKind::kAttention, shape_flops(shape), shape_bytes(shape), shape,
          launches};
}

// Packed documents (Transformer Engine's THD format) as a batch of short sequences: the
// micro-batch's documents (seq / document of them a sequence, rounded), each causal over its own
// tokens, in the launches a sequence's attention takes (one; under the CP ring one a step, each
// step over every document's chunks). Under the ring Transformer Engine cuts each document in
// 2 x cp chunks, padded to a whole number of tokens each.
LayerShape documents_as_sequences(const LayerShape& s) {
  LayerShape d = s;
  d.batch = s.batch * std::max<std::int64_t>(1, std::llround(s.seq / s.document));
  d.seq = s.document;
  if (s.cp_ring > 1) {
    const double chunks = 2.0 * static_cast<double>(s.cp_ring);
    d.seq = std::ceil(s.document / chunks) * chunks;
  }
  d.document = 0;
  d.local_block = 0;
  return d;
}

// Whether a local attention layer keeps its locality under the plan's context parallelism: with
// none, a2a (the whole sequence on 1/cp of the heads) and all-gather (Transformer Engine limits
// each step to the keys the window sees). The p2p ring computes every block whole; a chunked
// attention under CP is costed whole too.
bool local_under_cp(const LayerShape& s) {
  if (s.cp_ring == 1) return true;
  return s.cp_comm == CpComm::kAllGather && s.sliding;
}

// Widths per token of a CP rank's attention tensors, on its share of the heads.
struct CpWidths {
  double q, kv, out;  // queries; keys and values together; the output
};
CpWidths cp_widths(const LayerShape& s) {
  const double split = static_cast<double>(s.cp_head_split);
  const double per_head_v = s.v / split / static_cast<double>(s.heads);
  return {s.q / split, s.kv / split + static_cast<double>(s.kv_heads) * per_head_v, s.v / split};
}

// Transformer Engine's K/V ring (AttnFuncWithCPAndKVP2P, p2p and a2a+p2p's p2p level) merges
// each step's partial results with element-wise kernels beside the attention's own. Forward: K
// and V packed into the first send buffer (a copy), the first step's output rescaled into the
// output (a copy), then each later step's output added after rescaling by its log-sum-exp (an
// add). Backward: K and V copied into the send buffer again, and each step's dQ, dK and dV copied
// into or added to their buffers. A step adds over all the rank's tokens or over half of them
// (the steps whose queries or keys are one of its two chunks); over the ring's ranks, one copy
// and 0.75 x (cp - 1) adds of the whole. The log-sum-exp merges (fp32 per token and head, under
// 2 % of these bytes) are left out.
void ring_merges(std::vector<KernelSpec>& k, const LayerShape& s, bool backward) {
  const double rows = static_cast<double>(s.batch) * s.seq / static_cast<double>(s.cp_ring);
  const CpWidths w = cp_widths(s);
  const double merged = backward ? w.q + w.kv : w.out;
  const std::string name = backward ? "attention.grad" : "attention";
  k.push_back(elementwise(name + ".cp_kv_pack", "copy", rows, w.kv));
  k.push_back(elementwise(name + ".cp_merge_first", "copy", rows, merged));
  KernelSpec adds = elementwise(name + ".cp_merge", "add", 0.75 * rows, merged);
  adds.launches = s.cp_ring - 1;
  k.push_back(adds);
}

// Transformer Engine's all-gather CP (AttnFuncWithCPAndKVAllGather, Megatron-Core's sbhd layout,
// where its per-chunk slices need no copy): the gathered K and V reordered into sequence order (a
// copy of the whole sequence's), each of the rank's two chunks' outputs copied into place. The
// backward gathers and reorders K and V again, zeroes the whole sequence's dK and dV (a write,
// priced as half a copy), copies each chunk's dQ into place, adds each chunk's dK and dV into the
// keys it saw (causal: its prefix, (cp + 1/2) x the rank's tokens over the two chunks; under a
// sliding window, whose `local_block` is two windows, at most each chunk and the window before
// it), and reorders dK and dV back before their reduce-scatter.
void allgather_copies(std::vector<KernelSpec>& k, const LayerShape& s, bool backward,
                      double local_block = 0) {
  const double rows = static_cast<double>(s.batch) * s.seq / static_cast<double>(s.cp);
  const double sequence = rows * static_cast<double>(s.cp);
  double added = (static_cast<double>(s.cp) + 0.5) * rows;
  if (local_block > 0) added = std::min(added, rows + local_block * static_cast<double>(s.batch));
  const CpWidths w = cp_widths(s);
  const std::string name = backward ? "attention.grad" : "attention";
  KernelSpec reorder = elementwise(name + ".cp_kv_reorder", "copy", sequence, w.kv);
  KernelSpec place = elementwise(name + ".cp_chunk_copy", "copy", rows / 2, backward ? w.q : w.out);
  place.launches = 2;
  if (!backward) {
    k.push_back(reorder);
    k.push_back(place);
    return;
  }
  reorder.launches = 2;  // K/V gathered, dK/dV to scatter
  k.push_back(reorder);
  k.push_back(elementwise(name + ".cp_kv_zero", "copy", sequence / 2, w.kv));
  k.push_back(place);
  KernelSpec adds = elementwise(name + ".cp_kv_add", "add", added / 2, w.kv);
  adds.launches = 2;
  k.push_back(adds);
}

// The fused attention of one pass. Context parallelism by ring (p2p, allgather's two halves, and
// a2a+p2p's p2p level, on its share of the heads) cuts the sequence in 2 x cp chunks of
// c = s / 2cp for a ring of cp ranks, rank i holding chunks i and 2cp-1-i. Its step on its own
// K/V is causal over its 2c tokens; each of the cp - 1 other steps is a full
// block, Transformer Engine's: half the queries against all the keys (c by 2c: the tiles of
// half the heads of a 2c block) on the steps from ranks after it, all the queries against half
// the keys (2c by c: two blocks of c) on those before it. Ranks differ in the mix; the mean rank
// has half of each. Every rank does 1/cp of the causal work.
void flash_attention(std::vector<KernelSpec>& k, const LayerShape& s, bool backward) {
  const auto pass = backward ? AttentionPass::kBackward : AttentionPass::kForward;
  const std::string name = backward ? "attention.grad" : "attention";
  // Packed documents shorter than a local block bound the attention first.
  if (s.document > 0 && (s.local_block == 0 || s.document < s.local_block)) {
    flash_attention(k, documents_as_sequences(s), backward);
    return;
  }
  if (s.local_block > 0 && s.local_block < s.seq && local_under_cp(s)) {
    // Local attention: causal blocks of local_block tokens over the whole sequence (a2a runs
    // it on 1/cp of the heads); all-gather CP over the rank's 1/cp of the queries, each chunk
    // against the keys its window sees (Transformer Engine's per-step KV ranges).
    const double tokens =
        s.cp_comm == CpComm::kAllGather ? s.seq / static_cast<double>(s.cp) : s.seq;
    const auto blocks = static_cast<std::int64_t>(std::ceil(tokens / s.local_block));
    k.push_back(attention(name, s, pass, s.local_block, true, blocks));
    if (s.cp_comm == CpComm::kAllGather && s.cp > 1)
      allgather_copies(k, s, backward, s.local_block);
    return;
  }
  if (s.cp_ring == 1) {
    k.push_back(attention(name, s, pass, s.seq, true, 1));
    return;
  }
  const double chunk = s.seq / (2.0 * static_cast<double>(s.cp_ring));
  k.push_back(attention(name, s, pass, 2 * chunk, true, 1));
  std::int64_t long_keys = s.cp_ring / 2;                      // steps of c queries by 2c keys
  if (s.heads % 2 != 0 || s.kv_heads % 2 != 0) long_keys = 0;  // as blocks of c instead
  if (long_keys > 0)
    k.push_back(attention(name + ".ring", s, pass, 2 * chunk, false, long_keys, 2));
  const std::int64_t short_keys = s.cp_ring - 1 - long_keys;  // steps of 2c queries by c keys
  if (short_keys > 0) {
    k.push_back(attention(name + ".ring_halves", s, pass, chunk, false, 2 * short_keys));
  }
  if (s.cp_comm == CpComm::kP2P || s.cp_comm == CpComm::kA2AP2P) ring_merges(k, s, backward);
  if (s.cp_comm == CpComm::kAllGather) allgather_copies(k, s, backward);
}

// A batched GEMM: b x heads products [m x k] @ [k x n], as one grouped shape.
KernelSpec batched_gemm(std::string name, const LayerShape& s, double m, double k, double n) {
  KernelShape shape =
      GemmShape{whole(m), whole(n), whole(k), DType::kBF16, s.batch * s.heads, GemmLayout::kTN};
  return {std::move(name), KernelKind::kGemm, shape_flops(shape), shape_bytes(shape), shape, 1};
}

}  // namespace

// The attention core of one pass. Flash: one fused kernel. Unfused (Megatron-LM's CoreAttention):
// the full s x s scores of every head (the causal mask does not skip work), softmax in place,
// then with attention dropout PyTorch's dropout over the probabilities (PV reads its output) and
// in the backward its mask applied to dP before the softmax's gradient.
void attention_core(std::vector<KernelSpec>& k, const LayerShape& s, bool backward) {
  if (!s.unfused_attention) {
    flash_attention(k, s, backward);
    return;
  }
  const double n = s.seq, d = static_cast<double>(s.head_dim);
  const double rows = static_cast<double>(s.batch * s.heads) * n;
  if (!backward) {
    k.push_back(batched_gemm("attention.scores", s, n, d, n));  // Q K^T
    k.push_back(
        memory("attention.softmax", KernelKind::kElementwise, "scale_mask_softmax", rows, n));
    if (s.attention_dropout) {
      k.push_back(elementwise("attention.dropout", "dropout", rows, n));
    }
    k.push_back(batched_gemm("attention.context", s, n, n, d));  // P V
    return;
  }
  k.push_back(batched_gemm("attention.context.dgrad", s, n, d, n));  // dP = dO V^T
  k.push_back(batched_gemm("attention.context.vgrad", s, n, n, d));  // dV = P^T dO
  if (s.attention_dropout) {
    k.push_back(elementwise("attention.dropout.grad", "dropout.grad", rows, n));
  }
  k.push_back(memory("attention.softmax.grad", KernelKind::kElementwise, "scale_mask_softmax.grad",
                     rows, n));
  k.push_back(batched_gemm("attention.scores.qgrad", s, n, n, d));  // dQ = dS K
  k.push_back(batched_gemm("attention.scores.kgrad", s, n, n, d));  // dK = dS^T Q
}

}  // namespace trainsim
