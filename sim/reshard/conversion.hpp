#pragma once
// The conversion of a checkpoint saved under one layout into another: for every rank of the new
// layout, the old files it reads and how many bytes of each, what it writes when it saves at the
// new layout, and the time to load on the platform's storage, against resuming at the same
// layout. The checkpoint holds, per parameter element, the BF16 weight (2 bytes), the fp32 master
// weight and the two fp32 Adam moments (12 bytes); gradients are not saved, and Adam's step
// counter is one scalar, not sharded, copied to every rank.
//
// Loading is fully parallel, as Megatron-LM's --ckpt-fully-parallel-load does it: what the ranks
// of a DP group (with context parallelism, dp x cp ranks: they hold the same weights) all need
// (the weights; all optimizer state without a distributed optimizer) is read once, a 1/(dp x cp)
// share by each, then exchanged over the group; a distributed optimizer's share is read by its
// owner alone. A routed expert's tensors, with expert parallelism, are held by one EP rank's
// expert-data-parallel group, which reads and exchanges them the same way. Only the rows of the
// model are read: padding rows of the old layout are skipped, those of the new one are initialised.
#include <map>
#include <string>
#include <vector>

#include "sim/platform/platform.hpp"
#include "sim/reshard/shards.hpp"

namespace trainsim {

inline constexpr double kCheckpointWeightBytes = 2;      // BF16
inline constexpr double kCheckpointOptimizerBytes = 12;  // fp32 master weight, exp_avg, exp_avg_sq

/// Old files, as the layout shards them: weights per (pp, tp) rank ("model pp0 tp1"), optimizer
/// state per (pp, tp) rank, or with a distributed optimizer per (pp, tp) rank and share of the
/// dp x cp group ("optim pp0 tp1 dp3": the fourth share). Routed experts kept apart (expert
/// parallelism): per (pp, ep, expert-TP) rank, their optimizer state per share of the
/// expert-data-parallel group ("model pp0 ep5 etp0", "optim pp0 ep5 etp0 edp1").
std::string model_file(std::int64_t pp, std::int64_t tp, std::int64_t ep);  // ep -1: not apart
std::string optimizer_file(std::int64_t pp, std::int64_t tp, std::int64_t ep,
                           std::int64_t share);  // share -1: no distributed optimizer

struct RankConversion {
  std::int64_t rank = 0;
  std::int64_t tp = 0, pp = 0, dp = 0, cp = 0, ep = 0, etp = 0;
  std::int64_t data_shard = 0;  // its place in the dp x cp group: the optimizer share it owns
  std::int64_t expert_data_shard = 0;   // and in the expert-data-parallel group, for its experts
  std::map<std::string, double> reads;  // old file -> bytes this rank reads from it
  double read_bytes = 0;
  double exchanged_bytes = 0;         // received from the ranks sharing its copies, after the reads
  double expert_exchanged_bytes = 0;  // of which its routed experts', from its EDP group
  double written_bytes = 0;  // its share when saving at the new layout (fully parallel save)
};

struct ConversionPlan {
  std::vector<RankConversion> ranks;
  double checkpoint_bytes = 0;      // the old checkpoint, padding included
  double new_checkpoint_bytes = 0;  // the same state saved at the new layout
  double read_bytes = 0;
  double written_bytes = 0;
  double storage_bandwidth = 0;  // bytes/s per node
  double read_s = 0;             // the busiest node's reads at that bandwidth
  double exchange_s = 0;         // the largest exchange within a group sharing a copy
  double load_s() const { return read_s + exchange_s; }
};

/// Bytes of a layout's checkpoint: weights and optimizer state of every tensor, stored once.
double checkpoint_bytes(const LayoutShards& layout);

/// What every rank of `to` reads of a checkpoint saved under `from`, and the time on `platform`.
ConversionPlan plan_conversion(const LayoutShards& from, const LayoutShards& to,
                               const Platform& platform);

}  // namespace trainsim
