// Megatron-LM's explicit pipeline layouts (--pipeline-model-parallel-layout,
// megatron/core/transformer/pipeline_parallel_layer_layout.py): a string such as "Et*3|(tt|)*29L"
// naming each virtual stage's embedding (E), decoder layers (t), multi-token-prediction modules
// (m) and loss (L).
#include <algorithm>
#include <cctype>
#include <charconv>

#include "sim/core/error.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

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

// The layout with separators dropped and (...)*N, then x*N, unrolled, each once over the string
// as Megatron's regex substitutions (r'\(([^)]+)\)\*(\d+)' then r'(.)\*(\d+)') do. The bound
// is on the whole expansion: many repetitions, each within it, once built hundreds of megabytes.
std::string expand_layout(const std::string& layout, const std::string& where) {
  std::string s;
  for (char c : layout) {
    if (c != ',' && c != ' ') s += c;
  }
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
  return s;
}

// The expanded layout cut at its stage boundaries, one string per virtual stage, checked against
// pp x vp and against Megatron-Core's rules for where E, m and L may stand.
std::vector<std::string> layout_stages(const std::string& expanded, const Model& model,
                                       std::int64_t pp, std::int64_t vp, const std::string& where) {
  std::vector<std::string> stages(1);
  for (char c : expanded) {
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
  for (const auto& st : stages) {
    for (char c : st) {
      embeddings += c == 'E';
      losses += c == 'L';
    }
  }
  if (embeddings != 1 || stages.front().empty() || stages.front().front() != 'E') {
    fail_input(where, "the layout must start with the embedding E, exactly once");
  }
  if (losses != 1 || stages.back().empty() || stages.back().back() != 'L') {
    fail_input(where, "the layout must end with the loss L, exactly once");
  }
  check_mtp_placement(stages, model.mtp_layers, pp, where);
  return stages;
}

}  // namespace

std::int64_t megatron_layout_stage_count(const std::string& layout, const std::string& where) {
  const std::string expanded = expand_layout(layout, where);
  return 1 + static_cast<std::int64_t>(std::count(expanded.begin(), expanded.end(), '|'));
}

Partition megatron_layout_partition(const Model& model, const std::string& layout, std::int64_t pp,
                                    std::int64_t vp, const std::string& where) {
  const std::vector<std::string> stages =
      layout_stages(expand_layout(layout, where), model, pp, vp, where);
  std::int64_t decoders = 0;
  for (const auto& st : stages) {
    for (char c : st) decoders += c == 't';
  }
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
