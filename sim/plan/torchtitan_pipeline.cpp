// torchtitan's pipeline: its schedules, virtual stages and split of the layers over the stages.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "sim/plan/torchtitan_reader.hpp"

namespace trainsim::torchtitan {

namespace {

// A Megatron layout of the virtual stages, each holding `layers[i]` decoder layers, the first
// the embedding and the last the loss: "Et*3|t*4|t*3L".
std::string layout_of(const std::vector<std::int64_t>& layers) {
  std::string out;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i > 0) out += "|";
    if (i == 0) out += "E";
    if (layers[i] == 1) out += "t";
    if (layers[i] > 1) out += "t*" + std::to_string(layers[i]);
    if (i + 1 == layers.size()) out += "L";
  }
  return out;
}

// torchtitan's split (generate_llm_fqn_per_model_part): the embedding and the output each
// weigh one layer, and the layers plus those two are spread evenly, the first stages taking
// the remainder.
std::vector<std::int64_t> even_split(JsonObject& p, std::int64_t stages, std::int64_t layers) {
  const std::int64_t effective = layers + 2;
  const std::int64_t per = effective / stages;
  if (per < 1) {
    p.fail("pipeline_parallel_degree", std::to_string(stages) +
                                           " stages are more than the layers, embedding and "
                                           "output (" +
                                           std::to_string(effective) + "), as torchtitan refuses");
  }
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < stages; ++i) {
    const std::int64_t weight = per + (i < effective % stages ? 1 : 0);
    out.push_back(weight - (i == 0 ? 1 : 0) - (i + 1 == stages ? 1 : 0));
  }
  return out;
}

// pipeline_parallel_split_points: "layers.N", each the first layer of a stage.
std::vector<std::int64_t> split_at_points(JsonObject& p, std::int64_t stages, std::int64_t layers) {
  const std::string key = "pipeline_parallel_split_points";
  const nlohmann::json& points = p.raw(key);
  if (!points.is_array() || static_cast<std::int64_t>(points.size()) != stages - 1) {
    p.fail(key, "must list " + std::to_string(stages - 1) + " split points for " +
                    std::to_string(stages) + " stages");
  }
  std::vector<std::int64_t> out;
  std::int64_t begin = 0;
  for (const auto& point : points) {
    const std::string s = point.is_string() ? point.get<std::string>() : "";
    std::int64_t at = -1;
    const char* digits = s.data() + std::min<std::size_t>(7, s.size());
    const auto r = std::from_chars(digits, s.data() + s.size(), at);
    if (!s.starts_with("layers.") || r.ec != std::errc() || r.ptr != s.data() + s.size() ||
        at <= begin || at >= layers) {
      p.fail(key, "must name increasing layers 'layers.N' with 0 < N < " + std::to_string(layers) +
                      ", got " + point.dump());
    }
    out.push_back(at - begin);
    begin = at;
  }
  out.push_back(layers - begin);
  return out;
}

}  // namespace

// The schedule, virtual stages per rank and torchtitan's split of the layers over them.
std::vector<std::int64_t> pipeline(JsonObject& p, const Degrees& d, std::int64_t num_layers,
                                   Reader& r) {
  if (d.pp == 1) return {num_layers};
  if (r.flagged("pp") || r.flagged("schedule") || r.flagged("vp") || r.flagged("partition")) {
    r.note(p.where("pipeline_parallel_schedule") +
           ": the command line sets the pipeline, so the config's schedule and split are not read");
    return {};
  }
  const std::string key = "pipeline_parallel_schedule";
  std::string name = p.optional_string(key).value_or("1F1B");
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool single = lower == "1f1b" || lower == "gpipe";
  if (!single && lower != "interleaved1f1b") {
    r.unpriced(p, key, "schedule",
               "'" + name + "' is not modelled (1F1B, GPipe and Interleaved1F1B are)");
    return {};
  }
  r.set(p, key, "schedule", single ? lower : "interleaved");
  std::int64_t per_rank = single ? 1 : 2;
  const std::string lps = "pipeline_parallel_layers_per_stage";
  if (const auto n = p.optional_integer(lps, kDegree)) {
    const std::int64_t stages = (num_layers + 2 + *n - 1) / *n;
    if (stages % d.pp != 0 || (single && stages != d.pp) || (!single && stages / d.pp < 2)) {
      p.fail(lps, "gives " + std::to_string(stages) +
                      " stages (layers, embedding and output over " + std::to_string(*n) +
                      "), which " + name + " over pp " + std::to_string(d.pp) +
                      " cannot run, as torchtitan refuses");
    }
    per_rank = stages / d.pp;
  }
  if (!single) r.set(p, p.has(lps) ? lps : key, "vp", std::to_string(per_rank));
  const std::int64_t stages = d.pp * per_rank;
  const bool points =
      p.has("pipeline_parallel_split_points") && !p.raw("pipeline_parallel_split_points").empty();
  const auto layers =
      points ? split_at_points(p, stages, num_layers) : even_split(p, stages, num_layers);
  r.set(p, points ? "pipeline_parallel_split_points" : "pipeline_parallel_degree", "partition",
        layout_of(layers));
  return single ? layers : std::vector<std::int64_t>{};
}

}  // namespace trainsim::torchtitan
