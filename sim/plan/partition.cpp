#include "sim/plan/partition.hpp"

#include "sim/core/error.hpp"

namespace trainsim {

const char* to_string(BlockKind kind) {
  switch (kind) {
    case BlockKind::kEmbedding:
      return "embedding";
    case BlockKind::kDecoder:
      return "decoder";
    case BlockKind::kMtp:
      return "mtp";
    case BlockKind::kFinalNorm:
      return "final_norm";
    case BlockKind::kLmHead:
      return "lm_head";
    case BlockKind::kCast:
      return "cast";
    case BlockKind::kLoss:
      return "loss";
  }
  return "?";
}

bool has_parameters(BlockKind kind) {
  return kind != BlockKind::kCast && kind != BlockKind::kLoss;
}

namespace {
const Block& block_at(const Partition& p, std::int64_t i) {
  return p.blocks[static_cast<std::size_t>(i)];
}
const StageRange& range_of(const Partition& p, std::int64_t stage) {
  return p.stages[static_cast<std::size_t>(stage)];
}
}  // namespace

Model built_model(Model model, const Partition& partition) {
  model.num_layers -= partition.dropped_layers;
  return model;
}

std::int64_t Partition::num_blocks(std::int64_t stage) const {
  const auto& r = range_of(*this, stage);
  return r.end - r.begin;
}

std::int64_t Partition::count(std::int64_t stage, BlockKind kind) const {
  const auto& r = range_of(*this, stage);
  std::int64_t n = 0;
  for (auto i = r.begin; i < r.end; ++i) {
    if (block_at(*this, i).kind == kind) ++n;
  }
  return n;
}

std::int64_t Partition::decoders(std::int64_t stage) const {
  return count(stage, BlockKind::kDecoder);
}

bool Partition::holds(std::int64_t stage, BlockKind kind) const {
  const auto& r = range_of(*this, stage);
  for (auto i = r.begin; i < r.end; ++i) {
    if (block_at(*this, i).kind == kind) return true;
  }
  return false;
}

bool Partition::has_parameters(std::int64_t stage) const {
  const auto& r = range_of(*this, stage);
  for (auto i = r.begin; i < r.end; ++i) {
    if (trainsim::has_parameters(block_at(*this, i).kind)) return true;
  }
  return false;
}

const Block* Partition::last_block(std::int64_t stage) const {
  const auto& r = range_of(*this, stage);
  return r.end > r.begin ? &block_at(*this, r.end - 1) : nullptr;
}

std::vector<std::string> Partition::labels(std::int64_t stage) const {
  const auto& r = range_of(*this, stage);
  std::vector<std::string> out;
  for (auto i = r.begin; i < r.end; ++i) {
    const auto& b = block_at(*this, i);
    if (b.kind == BlockKind::kMtp) {
      out.push_back("mtp " + std::to_string(b.layer));
      continue;
    }
    if (b.kind != BlockKind::kDecoder) {
      out.emplace_back(to_string(b.kind));
      continue;
    }
    auto j = i;
    while (j + 1 < r.end && block_at(*this, j + 1).kind == BlockKind::kDecoder) ++j;
    const auto first = b.layer;
    const auto last = block_at(*this, j).layer;
    out.push_back(first == last ? "decoder " + std::to_string(first)
                                : "decoder " + std::to_string(first) + "-" + std::to_string(last));
    i = j;
  }
  return out;
}

std::vector<std::int64_t> Partition::decoder_counts() const {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 0; s < num_stages(); ++s) out.push_back(decoders(s));
  return out;
}

std::string Partition::megatron_layout() const {
  std::string out;
  for (std::int64_t s = 0; s < num_stages(); ++s) {
    if (s > 0) out += '|';
    if (holds(s, BlockKind::kEmbedding)) out += 'E';
    const auto t = decoders(s);
    if (t == 1) out += 't';
    if (t > 1) out += "t*" + std::to_string(t);
    const auto m = count(s, BlockKind::kMtp);
    if (m == 1) out += 'm';
    if (m > 1) out += "m*" + std::to_string(m);
    if (holds(s, BlockKind::kLoss)) out += 'L';
  }
  return out;
}

std::vector<Block> model_blocks(const Model& model, bool with_cast) {
  std::vector<Block> blocks;
  blocks.push_back({BlockKind::kEmbedding});
  for (std::int64_t l = 0; l < model.num_layers; ++l) blocks.push_back({BlockKind::kDecoder, l});
  for (std::int64_t k = 0; k < model.mtp_layers; ++k) blocks.push_back({BlockKind::kMtp, k});
  blocks.push_back({BlockKind::kFinalNorm});
  blocks.push_back({BlockKind::kLmHead});
  if (with_cast) blocks.push_back({BlockKind::kCast});
  blocks.push_back({BlockKind::kLoss});
  return blocks;
}

Partition partition_from_bounds(std::string method, std::vector<Block> blocks,
                                const std::vector<std::int64_t>& bounds, std::int64_t chunks) {
  Partition p;
  p.method = std::move(method);
  p.chunks = chunks;
  p.blocks = std::move(blocks);
  for (std::size_t s = 0; s + 1 < bounds.size(); ++s)
    p.stages.push_back({bounds[s], bounds[s + 1]});
  return p;
}

PartitionSpec parse_partition_spec(const std::string& text, const std::string& where) {
  if (text == "uniform") return {PartitionRule::kUniform, ""};
  if (text == "nanotron") return {PartitionRule::kNanotron, ""};
  if (text == "balanced") return {PartitionRule::kBalanced, ""};
  if (text == "deepspeed-uniform") return {PartitionRule::kDeepSpeedUniform, ""};
  if (text == "deepspeed-parameters") return {PartitionRule::kDeepSpeedParameters, ""};
  const std::string type_prefix = "deepspeed-type:";
  if (text.rfind(type_prefix, 0) == 0) {
    std::string regex = text.substr(type_prefix.size());
    if (regex.empty())
      fail_input(where,
                 "deepspeed-type: needs a regular expression, e.g. deepspeed-type:transformer");
    check_deepspeed_type_pattern(regex, where);
    return {PartitionRule::kDeepSpeedType, regex};
  }
  bool layout_chars = !text.empty();
  for (char c : text) {
    if (std::string("EtLm|()*,0123456789 ").find(c) == std::string::npos) layout_chars = false;
  }
  if (layout_chars &&
      (text.find('|') != std::string::npos || text.find('E') != std::string::npos)) {
    return {PartitionRule::kLayout, text};
  }
  fail_input(where, "unknown partition \"" + text +
                        "\" (rules: uniform, nanotron, deepspeed-uniform, deepspeed-parameters, "
                        "deepspeed-type:REGEX, balanced; or a Megatron layout such as "
                        "\"Et*3|t*4|t*4|t*3L\")");
}

}  // namespace trainsim
