// `trainsim reshard`'s output: one result, as text or JSON (the JSON lists every tensor and rank;
// the text groups decoder layers and shows the first ranks).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/core/version.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/reshard.hpp"

namespace trainsim {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kRanksShown = 16;

// A column and the space that separates it from the next.
std::string pad(std::string s, std::size_t width) {
  return pad_right(std::move(s), width) + " ";
}

std::string framework_name(const Plan& plan) {
  switch (plan.effective_framework()) {
    case Framework::kMegatron:
      return "Megatron-LM";
    case Framework::kNanotron:
      return "nanotron";
    case Framework::kDeepSpeed:
      return "DeepSpeed";
    case Framework::kColossalAI:
      return "ColossalAI";
  }
  return "?";
}

// "3", "0-7" for every stage from 0 to 7, "0,7" for the two ends only.
std::string stages_text(std::vector<std::int64_t> stages) {
  if (stages.empty()) return "not built";
  std::sort(stages.begin(), stages.end());
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  const std::int64_t lo = stages.front(), hi = stages.back();
  if (lo == hi) return std::to_string(lo);
  if (hi - lo + 1 == static_cast<std::int64_t>(stages.size())) {
    return std::to_string(lo) + "-" + std::to_string(hi);
  }
  std::string out;
  for (auto s : stages) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

std::string padding_text(const LayoutShards& l, std::int64_t vocab) {
  return format_grouped(l.padded_vocab) + " rows at tp " + std::to_string(l.plan.tp) +
         " (a multiple of " + std::to_string(l.vocab_multiple) + " x " + std::to_string(l.plan.tp) +
         (l.padded_vocab > vocab ? ", " + std::to_string(l.padded_vocab - vocab) + " of padding)"
                                 : ")");
}

// "model.layers.*.mlp.down_proj.weight (x32)": a kind and how many tensors it groups.
std::string row_name(const std::string& kind, std::int64_t count) {
  return count > 1 ? kind + " (x" + std::to_string(count) + ")" : kind;
}

// One row per tensor kind (decoder layers grouped): shapes and the stages holding it.
void tensor_table(const ReshardResult& r, std::ostringstream& o) {
  struct Row {
    std::string kind;
    std::int64_t count = 0;
    std::size_t first = 0;
    std::vector<std::int64_t> from_stages, to_stages;
  };
  std::vector<Row> rows;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < r.to.params.size(); ++i) {
    const std::string kind = r.to.params[i].kind();
    auto [it, fresh] = index.emplace(kind, rows.size());
    if (fresh) rows.push_back({kind, 0, i, {}, {}});
    Row& row = rows[it->second];
    ++row.count;
    for (auto s : r.from.placed[i].stages) row.from_stages.push_back(s);
    for (auto s : r.to.placed[i].stages) row.to_stages.push_back(s);
  }
  // The name column fits the longest name (Llama 4's carry "language_model.").
  std::size_t width = 52;
  for (const auto& row : rows) width = std::max(width, row_name(row.kind, row.count).size() + 1);
  o << pad("tensor", width) << pad("global shape", 16) << pad("tp split", 11)
    << pad("from: shard", 16) << pad("stages", 7) << pad("to: shard", 16) << "stages\n";
  for (const auto& row : rows) {
    const ParamSpec& spec = r.to.params[row.first];
    o << pad(row_name(row.kind, row.count), width) << pad(shape_text(spec.shape), 16)
      << pad(to_string(spec.split), 11)
      << pad(shape_text(r.from.placed[row.first].shards.front().shape), 16)
      << pad(stages_text(row.from_stages), 7)
      << pad(shape_text(r.to.placed[row.first].shards.front().shape), 16)
      << stages_text(row.to_stages) << "\n";
  }
}

// "ep 4 (2 experts a rank: expert e on EP rank e / 2), each split over expert TP 1", or "no EP"
// with every expert on every rank.
std::string experts_text(const LayoutShards& l, std::int64_t experts) {
  if (!l.experts_apart()) return "no EP (every expert on every rank, split over TP as a dense MLP)";
  const std::int64_t per = experts / l.plan.ep;
  return "ep " + std::to_string(l.plan.ep) + " (" + std::to_string(per) + " expert" +
         (per == 1 ? "" : "s") + " a rank: expert e on EP rank e / " + std::to_string(per) +
         "), each split over expert TP " + std::to_string(l.plan.expert_tp());
}

// Where the routed experts go, where either layout has expert parallelism or expert TP.
void experts_line(const ReshardResult& r, std::ostringstream& o) {
  if (!r.from.experts_apart() && !r.to.experts_apart()) return;
  std::int64_t experts = 0;
  for (const auto& p : r.to.params) experts = std::max(experts, p.expert + 1);
  o << "routed experts (" << experts << " a layer): from " << experts_text(r.from, experts)
    << "; to " << experts_text(r.to, experts) << "\n";
}

void buffer_lines(const LayoutShards& l, const char* which, std::ostringstream& o) {
  if (l.buffers.empty()) return;
  o << which << " distributed optimizer (zero " << l.plan.zero << "): per (tp, pp) rank a flat "
    << "buffer of ";
  std::vector<std::string> sizes;
  for (std::size_t s = 0; s < l.buffers.size(); ++s) {
    sizes.push_back(format_grouped(l.buffers[s].size) + " elements on stage " + std::to_string(s));
  }
  const std::string n = std::to_string(l.plan.data_shards());
  o << and_list(sizes) << "; " << (l.plan.cp > 1 ? "rank d of the dp x cp group" : "dp rank d")
    << " owns elements [d x size / " << n << ", (d + 1) x size / " << n << ")\n";
  if (l.expert_buffers.empty()) return;
  // Every EP rank of a stage holds as many experts, of the same shapes: one size per stage.
  sizes.clear();
  for (std::int64_t s = 0; s < l.plan.pp; ++s) {
    const FlatBuffer& b = l.expert_buffer(s, 0);
    if (b.size > 0) {
      sizes.push_back(format_grouped(b.size) + " elements on stage " + std::to_string(s));
    }
  }
  const std::string e = std::to_string(l.plan.expert_data_shards());
  o << "  and per (ep, etp, pp) rank an expert buffer of its routed experts' tensors, "
    << (sizes.empty() ? "empty" : and_list(sizes)) << "; rank d of the expert-data-parallel "
    << "group owns elements [d x size / " << e << ", (d + 1) x size / " << e << ")\n";
}

std::string reads_text(const RankConversion& rc) {
  std::vector<std::pair<std::string, double>> reads(rc.reads.begin(), rc.reads.end());
  std::string s;
  for (std::size_t i = 0; i < reads.size() && i < 3; ++i) {
    s += (i ? ", " : "") + reads[i].first + " " + format_bytes(reads[i].second);
  }
  if (reads.size() > 3) {
    s += ", +" + std::to_string(reads.size() - 3) + (reads.size() == 4 ? " file" : " files");
  }
  return s;
}

void plan_section(const ReshardResult& r, std::ostringstream& o) {
  const ConversionPlan& p = r.plan;
  const bool cp = r.to.plan.cp > 1;  // a column for the CP rank only where there is one
  const bool ep = r.to.plan.ep > 1;  // and for the EP rank
  o << "conversion (fully parallel load: a "
    << (cp ? "dp x cp group reads what its ranks share once, 1/(dp x cp)"
           : "DP group reads what its ranks share once, 1/dp")
    << " each, then exchanges it" << (ep ? "; an EP rank's experts, its EDP group" : "") << "):\n";
  o << pad("rank", 5) << pad("tp", 3) << pad("pp", 3) << (cp ? pad("cp", 3) : "") << pad("dp", 4)
    << (ep ? pad("ep", 4) : "") << pad("read", 11) << pad("received", 11) << pad("written", 11)
    << "old files read\n";
  for (std::size_t i = 0; i < p.ranks.size() && i < kRanksShown; ++i) {
    const auto& rc = p.ranks[i];
    o << pad(std::to_string(rc.rank), 5) << pad(std::to_string(rc.tp), 3)
      << pad(std::to_string(rc.pp), 3) << (cp ? pad(std::to_string(rc.cp), 3) : "")
      << pad(std::to_string(rc.dp), 4) << (ep ? pad(std::to_string(rc.ep), 4) : "")
      << pad(format_bytes(rc.read_bytes), 11) << pad(format_bytes(rc.exchanged_bytes), 11)
      << pad(format_bytes(rc.written_bytes), 11) << reads_text(rc) << "\n";
  }
  if (p.ranks.size() > kRanksShown) {
    o << "... " << p.ranks.size() - kRanksShown << " more ranks (--format json lists them all)\n";
  }
  o << "read " << format_bytes(p.read_bytes) << " of the " << format_bytes(p.checkpoint_bytes)
    << " checkpoint; write " << format_bytes(p.written_bytes) << " when saving at the new layout\n";
  o << "load " << format_seconds(p.load_s()) << " on " << r.platform_name << " ("
    << format_seconds(p.read_s) << " reading at " << format_fixed(p.storage_bandwidth / 1e9, 1)
    << " GB/s per node, " << format_seconds(p.exchange_s)
    << " exchanging what ranks share); resuming at the same layout: "
    << format_seconds(r.same_layout_load_s) << "\n";
}

}  // namespace

std::string reshard_text(const ReshardResult& r) {
  std::ostringstream o;
  const std::int64_t vocab = r.to.params.front().shape.front();
  o << "trainsim " << version() << " reshard: " << r.model_name << ", " << framework_name(r.to.plan)
    << "'s rules, on " << r.platform_name << "\n";
  o << "from " << layout_text(r.from.plan) << " (" << r.from.plan.world_size() << " GPUs, layout "
    << r.from.partition.megatron_layout() << ") to " << layout_text(r.to.plan) << " ("
    << r.to.plan.world_size() << " GPUs, layout " << r.to.partition.megatron_layout() << ")\n";
  o << "vocabulary " << format_grouped(vocab) << ": " << padding_text(r.from, vocab) << " -> "
    << padding_text(r.to, vocab) << "\n\n";
  tensor_table(r, o);
  experts_line(r, o);
  o << "optimizer state of every tensor: fp32 master weight, Adam exp_avg and exp_avg_sq, each "
       "sharded as the weight; Adam's step: one scalar per rank, not sharded\n";
  buffer_lines(r.from, "from:", o);
  buffer_lines(r.to, "to:", o);
  if (r.checkpoint) {
    o << "\ncheckpoint " << r.checkpoint->directory << ": " << r.checkpoint->format << ", "
      << r.checkpoint->files << (r.checkpoint->files == 1 ? " file" : " files") << " read ("
      << r.checkpoint->tensors.size()
      << (r.checkpoint->tensors.size() == 1 ? " tensor" : " tensors") << "), "
      << format_bytes(static_cast<double>(r.checkpoint->bytes));
    if (r.checkpoint->pickled_files > 0) {
      o << "; " << r.checkpoint->pickled_files << " pickled files listed, not opened";
    }
    o << "\n";
  }
  o << "\n";
  plan_section(r, o);
  o << "\n";
  if (r.diagnostics.empty()) {
    o << "no diagnostics: the checkpoint resumes under the new layout\n";
    return o.str();
  }
  o << "diagnostics:\n";
  for (const auto& d : r.diagnostics) {
    o << "  [" << to_string(d.severity) << "] " << d.id;
    if (d.stage) o << " (stage " << *d.stage << ")";
    o << ": " << d.message << "\n";
    if (!d.fix.empty()) o << "      fix: " << d.fix << "\n";
  }
  return o.str();
}

namespace {

Json layout_json(const LayoutShards& l) {
  Json buffers = Json::array();
  for (std::size_t s = 0; s < l.buffers.size(); ++s) {
    buffers.push_back({{"stage", s}, {"size", l.buffers[s].size}});
  }
  Json expert_buffers = Json::array();
  for (std::int64_t s = 0; !l.expert_buffers.empty() && s < l.plan.pp; ++s) {
    for (std::int64_t ep = 0; ep < l.plan.ep; ++ep) {
      expert_buffers.push_back({{"stage", s}, {"ep", ep}, {"size", l.expert_buffer(s, ep).size}});
    }
  }
  return {{"tp", l.plan.tp},
          {"pp", l.plan.pp},
          {"vp", l.plan.vp},
          {"dp", l.plan.dp},
          {"cp", l.plan.cp},
          {"ep", l.plan.ep},
          {"etp", l.plan.expert_tp()},
          {"zero", l.plan.zero},
          {"partition", l.partition.megatron_layout()},
          {"vocab_multiple", l.vocab_multiple},
          {"padded_vocab", l.padded_vocab},
          {"flat_buffers", buffers},
          {"expert_flat_buffers", expert_buffers},
          {"checkpoint_bytes", checkpoint_bytes(l)}};
}

Json placement_json(const LayoutShards& l, std::size_t i) {
  const PlacedParam& p = l.placed[i];
  Json shards = Json::array();
  for (const auto& s : p.shards) {
    shards.push_back(
        {{"shape", s.shape}, {"slice", {s.split.begin, s.split.end}}, {"model_rows", s.real}});
  }
  Json j = {{"padded_shape", p.padded_shape}, {"stages", p.stages}, {"shards", shards}};
  if (p.ep_rank >= 0) j["ep_rank"] = p.ep_rank;
  if (!l.buffers.empty()) {
    Json flat = Json::array();
    for (auto s : p.stages) {
      const Interval iv = l.buffer_of(i, s).of(i);
      flat.push_back({{"stage", s}, {"offsets", {iv.begin, iv.end}}});
    }
    j["flat_buffer"] = flat;
  }
  return j;
}

}  // namespace

std::string reshard_json(const ReshardResult& r) {
  Json tensors = Json::array();
  for (std::size_t i = 0; i < r.to.params.size(); ++i) {
    const ParamSpec& spec = r.to.params[i];
    tensors.push_back({{"name", spec.name},
                       {"shape", spec.shape},
                       {"tp_split", to_string(spec.split)},
                       {"from", placement_json(r.from, i)},
                       {"to", placement_json(r.to, i)}});
  }
  Json ranks = Json::array();
  for (const auto& rc : r.plan.ranks) {
    Json reads = Json::object();
    for (const auto& [file, bytes] : rc.reads) reads[file] = bytes;
    ranks.push_back({{"rank", rc.rank},
                     {"tp", rc.tp},
                     {"pp", rc.pp},
                     {"dp", rc.dp},
                     {"cp", rc.cp},
                     {"ep", rc.ep},
                     {"etp", rc.etp},
                     {"data_shard", rc.data_shard},
                     {"expert_data_shard", rc.expert_data_shard},
                     {"read_bytes", rc.read_bytes},
                     {"received_bytes", rc.exchanged_bytes},
                     {"written_bytes", rc.written_bytes},
                     {"reads", reads}});
  }
  Json diagnostics = Json::array();
  for (const auto& d : r.diagnostics) {
    diagnostics.push_back({{"id", d.id},
                           {"severity", to_string(d.severity)},
                           {"stage", d.stage ? Json(*d.stage) : Json(nullptr)},
                           {"message", d.message},
                           {"fix", d.fix}});
  }
  Json j = {{"schema_version", 1},
            {"trainsim_version", version()},
            {"model", r.model_name},
            {"platform", r.platform_name},
            {"framework", to_string(r.to.plan.effective_framework())},
            {"from", layout_json(r.from)},
            {"to", layout_json(r.to)},
            {"optimizer_states", {"master_weight (fp32)", "exp_avg (fp32)", "exp_avg_sq (fp32)"}},
            {"step", "one scalar per rank, not sharded"},
            {"tensors", tensors}};
  if (r.checkpoint) {
    j["checkpoint"] = {
        {"directory", r.checkpoint->directory}, {"format", r.checkpoint->format},
        {"files", r.checkpoint->files},         {"tensors", r.checkpoint->tensors.size()},
        {"bytes", r.checkpoint->bytes},         {"pickled_files", r.checkpoint->pickled_files}};
  }
  j["conversion"] = {{"checkpoint_bytes", r.plan.checkpoint_bytes},
                     {"new_checkpoint_bytes", r.plan.new_checkpoint_bytes},
                     {"read_bytes", r.plan.read_bytes},
                     {"written_bytes", r.plan.written_bytes},
                     {"storage_read_bandwidth_Bps", r.plan.storage_bandwidth},
                     {"read_s", r.plan.read_s},
                     {"exchange_s", r.plan.exchange_s},
                     {"load_s", r.plan.load_s()},
                     {"same_layout_load_s", r.same_layout_load_s},
                     {"ranks", ranks}};
  j["diagnostics"] = diagnostics;
  return j.dump(2) + "\n";
}

}  // namespace trainsim
