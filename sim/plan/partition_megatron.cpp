// Megatron-LM's layer-to-stage rules: the uniform split with its uneven-stage options
// (megatron/core/transformer/transformer_block.py, get_num_layers_to_build) and explicit
// layouts (megatron/core/transformer/pipeline_parallel_layer_layout.py).
#include <cctype>
#include <charconv>

#include "sim/core/error.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

namespace {

// Virtual stage s holds counts[s] decoders; the embedding goes first, the multi-token-prediction
// modules and the loss blocks last (Megatron-Core builds the modules on the last stage).
Partition from_decoder_counts(std::string method, const std::vector<std::int64_t>& counts,
                              std::int64_t model_layers, std::int64_t chunks, std::int64_t mtp) {
  std::int64_t built = 0;
  for (auto c : counts) built += c;
  Partition p;
  p.method = std::move(method);
  p.chunks = chunks;
  p.blocks.push_back({BlockKind::kEmbedding});
  for (std::int64_t l = 0; l < built; ++l) p.blocks.push_back({BlockKind::kDecoder, l});
  for (std::int64_t k = 0; k < mtp; ++k) p.blocks.push_back({BlockKind::kMtp, k});
  p.blocks.push_back({BlockKind::kFinalNorm});
  p.blocks.push_back({BlockKind::kLmHead});
  p.blocks.push_back({BlockKind::kLoss});
  p.dropped_layers = model_layers - built;
  std::int64_t next = 1;  // first decoder block
  const auto stages = static_cast<std::int64_t>(counts.size());
  for (std::int64_t s = 0; s < stages; ++s) {
    std::int64_t begin = s == 0 ? 0 : next;
    next += counts[static_cast<std::size_t>(s)];
    std::int64_t end = s == stages - 1 ? static_cast<std::int64_t>(p.blocks.size()) : next;
    p.stages.push_back({begin, end});
  }
  return p;
}

}  // namespace

Partition megatron_uniform_partition(const Model& model, const Plan& plan,
                                     const PlanOrigin& origin) {
  const std::int64_t L = model.num_layers;
  const std::int64_t v = plan.vp;
  const std::int64_t p = plan.pp * v;  // virtual stages
  const std::int64_t first = plan.decoder_first_pipeline_num_layers;
  const std::int64_t last = plan.decoder_last_pipeline_num_layers;
  const bool emb = plan.account_for_embedding_in_pipeline_split;
  const bool loss = plan.account_for_loss_in_pipeline_split;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(p), 0);

  if (first >= 0 || last >= 0) {
    const char* field =
        first >= 0 ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers";
    if (emb || loss) {
      fail_input(origin.of(field),
                 "cannot be combined with --account-for-embedding/loss-in-pipeline-split "
                 "(Megatron-LM rejects both together)");
    }
    if (v > 1) fail_input(origin.of(field), "is not supported with interleaving (--vp) here");
    if (p < 2) fail_input(origin.of(field), "needs at least 2 pipeline stages");
    std::int64_t rest = L;
    std::int64_t stages_left = p;
    if (first >= 0) {
      rest -= first;
      --stages_left;
    }
    if (last >= 0) {
      rest -= last;
      --stages_left;
    }
    if (rest < 0) {
      fail_input(origin.of(field),
                 "asks for more layers than the model has (" + std::to_string(L) + ")");
    }
    std::int64_t per = 0;
    if (stages_left > 0) {
      if (rest % stages_left != 0) {
        fail_input(origin.of(field),
                   "leaves " + std::to_string(rest) + " layers for " + std::to_string(stages_left) +
                       " other stages; Megatron-LM requires them to divide evenly");
      }
      per = rest / stages_left;
    } else if (rest != 0) {
      fail_input(origin.of(field), "with 2 stages the first and last counts must add up to " +
                                       std::to_string(L) + " layers, got " +
                                       std::to_string(L - rest));
    }
    for (auto& c : counts) c = per;
    if (first >= 0) counts.front() = first;
    if (last >= 0) counts.back() = last;
    return from_decoder_counts("uniform", counts, L, v, model.mtp_layers);
  }

  if (emb || loss) {
    const std::int64_t units = L + (emb ? 1 : 0) + (loss ? 1 : 0);
    const char* field =
        emb ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split";
    if (units % p != 0) {
      fail_input(origin.of(field), "makes " + std::to_string(units) +
                                       " layers (decoders plus embedding/loss), " +
                                       "which Megatron-LM requires to be divisible by pp (" +
                                       std::to_string(p) + ")");
    }
    const std::int64_t per = units / p;
    for (auto& c : counts) c = per;
    if (emb) counts.front() -= 1;
    if (loss) counts.back() -= 1;
    if (counts.front() < 0 || counts.back() < 0) {
      fail_input(origin.of(field), "leaves no room for the embedding or loss on its stage");
    }
    return from_decoder_counts("uniform", counts, L, v, model.mtp_layers);
  }

  // Plain rule: num_layers // pp per stage (any remainder is not built).
  for (auto& c : counts) c = L / p;
  return from_decoder_counts("uniform", counts, L, v, model.mtp_layers);
}

namespace {

// Megatron-Core's rules for the multi-token-prediction modules of a layout
// (pipeline_parallel_layer_layout.py): as many m as the model trains, after every decoder
// layer, all in one virtual stage, the last model chunk of its pipeline rank.
void check_mtp_placement(const std::vector<std::string>& stages, std::int64_t mtp_layers,
                         std::int64_t pp, const std::string& where) {
  std::int64_t count = 0;
  std::int64_t holder = -1;
  bool decoder_after = false;
  for (std::size_t v = 0; v < stages.size(); ++v) {
    for (char c : stages[v]) {
      if (c == 'm') {
        ++count;
        if (holder >= 0 && holder != static_cast<std::int64_t>(v)) {
          fail_input(where, "all multi-token-prediction modules (m) must be in one stage");
        }
        holder = static_cast<std::int64_t>(v);
      }
      if (c == 't' && count > 0) decoder_after = true;
    }
  }
  if (count != mtp_layers) {
    fail_input(where, "the layout has " + std::to_string(count) + " multi-token-prediction module" +
                          (count == 1 ? "" : "s") + " (m) but the model trains " +
                          std::to_string(mtp_layers) +
                          (mtp_layers > 0 ? " (--mtp-num-layers 0 trains none)"
                                          : " (--mtp-num-layers sets how many)"));
  }
  if (decoder_after) {
    fail_input(where,
               "decoder layers (t) must all come before the multi-token-prediction "
               "modules (m)");
  }
  const auto chunks = static_cast<std::int64_t>(stages.size()) / pp;
  if (holder >= 0 && holder / pp != chunks - 1) {
    fail_input(where,
               "the multi-token-prediction modules (m) must be in the last model chunk "
               "of their pipeline rank (Megatron-Core's rule), not in chunk " +
                   std::to_string(holder / pp + 1) + " of " + std::to_string(chunks));
  }
}

}  // namespace

Partition megatron_layout_partition(const Model& model, const std::string& layout, std::int64_t pp,
                                    std::int64_t vp, const std::string& where) {
  std::string s;
  for (char c : layout) {
    if (c != ',' && c != ' ') s += c;
  }
  // Unroll (...)*N, then x*N, each once over the string as Megatron's regex substitutions
  // (r'\(([^)]+)\)\*(\d+)' then r'(.)\*(\d+)') do. The bound is on the whole expansion: many
  // repetitions, each within it, once built hundreds of megabytes.
  constexpr std::size_t kMaxLength = 1'000'000;
  const auto repeat = [&](std::string& out, const std::string& unit, const std::string& digits) {
    std::size_t times = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), times);
    if (ec != std::errc() || times > kMaxLength || out.size() + unit.size() * times > kMaxLength) {
      fail_input(where, "layout expands beyond " + std::to_string(kMaxLength) + " characters");
    }
    for (std::size_t k = 0; k < times; ++k) out += unit;
  };
  const auto digits_at = [](const std::string& text, std::size_t pos) {
    std::size_t end = pos;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    return text.substr(pos, end - pos);
  };
  std::string groups;
  for (std::size_t i = 0; i < s.size();) {
    const auto close = s[i] == '(' ? s.find(')', i + 1) : std::string::npos;
    if (close != std::string::npos && close > i + 1 && close + 1 < s.size() &&
        s[close + 1] == '*') {
      const std::string digits = digits_at(s, close + 2);
      if (!digits.empty()) {
        repeat(groups, s.substr(i + 1, close - i - 1), digits);
        i = close + 2 + digits.size();
        continue;
      }
    }
    groups += s[i++];
  }
  s.clear();
  for (std::size_t i = 0; i < groups.size();) {
    if (i + 1 < groups.size() && groups[i + 1] == '*') {
      const std::string digits = digits_at(groups, i + 2);
      if (!digits.empty()) {
        repeat(s, std::string(1, groups[i]), digits);
        i += 2 + digits.size();
        continue;
      }
    }
    s += groups[i++];
  }
  std::vector<std::string> stages(1);
  for (char c : s) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      fail_input(where, std::string("invalid layout character '") + c +
                            "' (E embedding, t decoder layer, m multi-token-prediction module, L "
                            "loss, | stage boundary)");
    }
  }
  if (static_cast<std::int64_t>(stages.size()) != pp * vp) {
    fail_input(where, "the layout has " + std::to_string(static_cast<std::int64_t>(stages.size())) +
                          (vp > 1 ? " stages but pp x vp is " + std::to_string(pp) + " x " +
                                        std::to_string(vp) + " = " + std::to_string(pp * vp)
                                  : " stages but pp is " + std::to_string(pp)));
  }
  std::int64_t embeddings = 0;
  std::int64_t losses = 0;
  std::int64_t decoders = 0;
  for (const auto& st : stages) {
    for (char c : st) {
      embeddings += c == 'E';
      losses += c == 'L';
      decoders += c == 't';
    }
  }
  if (embeddings != 1 || stages.front().empty() || stages.front().front() != 'E') {
    fail_input(where, "the layout must start with the embedding E, exactly once");
  }
  if (losses != 1 || stages.back().empty() || stages.back().back() != 'L') {
    fail_input(where, "the layout must end with the loss L, exactly once");
  }
  check_mtp_placement(stages, model.mtp_layers, pp, where);
  if (decoders > model.num_layers) {
    fail_input(where, "the layout has " + std::to_string(decoders) +
                          " decoder layers but the model has " + std::to_string(model.num_layers));
  }
  Partition p;
  p.method = "layout:" + layout;
  p.chunks = vp;
  p.dropped_layers = model.num_layers - decoders;
  std::int64_t layer = 0;
  std::int64_t mtp = 0;
  for (const auto& st : stages) {
    StageRange r;
    r.begin = static_cast<std::int64_t>(p.blocks.size());
    for (char c : st) {
      if (c == 'E') p.blocks.push_back({BlockKind::kEmbedding});
      if (c == 't') p.blocks.push_back({BlockKind::kDecoder, layer++});
      if (c == 'm') p.blocks.push_back({BlockKind::kMtp, mtp++});
      if (c == 'L') {
        p.blocks.push_back({BlockKind::kFinalNorm});
        p.blocks.push_back({BlockKind::kLmHead});
        p.blocks.push_back({BlockKind::kLoss});
      }
    }
    r.end = static_cast<std::int64_t>(p.blocks.size());
    p.stages.push_back(r);
  }
  return p;
}

}  // namespace trainsim
