#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/core/format.hpp"
#include "sim/core/percent.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/report/published_text.hpp"
#include "sim/report/report.hpp"

namespace trainsim {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += ", ";
    out += i;
  }
  return out;
}

// A table cell: padded to its column's width, and one space after a value wider than that (a
// trillion parameters on one GPU), so that the columns never run together.
std::string cell(std::string s, std::size_t width) {
  s = pad_right(std::move(s), width);
  if (!s.empty() && s.back() != ' ') s += ' ';
  return s;
}

// "0", "1-3": the stages of a run of equal rows.
std::string stage_range(std::int64_t first, std::int64_t last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

std::string collective_row(const CollectiveStat& c) {
  const std::string group = format_grouped(c.members) + " GPUs, " + format_grouped(c.nodes) +
                            (c.nodes == 1 ? " node" : " nodes");
  return cell(to_string(c.dim), 10) + cell(to_string(c.kind), 16) + cell(group, 22) +
         cell(format_grouped(c.calls), 8) + cell(format_bytes(c.bytes), 12) +
         cell(to_string(c.algorithm), 12) + cell(format_seconds(c.seconds), 11) +
         format_fixed(c.bus_bandwidth / 1e9, 1) + " GB/s";
}

// Each stage's collectives; consecutive stages with the same rows share one block.
void write_collectives(const Report& r, std::ostringstream& o) {
  std::vector<std::pair<std::string, std::vector<std::string>>> blocks;  // stages, rows
  std::int64_t first = 0;
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    std::vector<std::string> rows;
    for (const auto& c : r.stages[i].collectives) rows.push_back(collective_row(c));
    const auto s = r.stages[i].index;
    if (!blocks.empty() && blocks.back().second == rows) {
      blocks.back().first = stage_range(first, s);
    } else {
      first = s;
      blocks.emplace_back(stage_range(s, s), std::move(rows));
    }
  }
  bool any = false;
  for (const auto& [stages, rows] : blocks) any = any || !rows.empty();
  if (!any) return;
  o << "collectives per step on each stage's GPU where they take longest (NCCL's algorithm; "
       "time and bus bandwidth on an idle network)\n"
    << cell("stage", 7) << cell("dim", 10) << cell("collective", 16) << cell("group", 22)
    << cell("calls", 8) << cell("buffer", 12) << cell("algorithm", 12) << cell("time", 11)
    << "bus bw\n";
  for (const auto& [stages, rows] : blocks) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      o << cell(k == 0 ? stages : "", 7) << rows[k] << "\n";
    }
  }
  o << "\n";
}

// The scenario's published figures, each with trainsim's error against it.
void write_published(const Report& r, std::ostringstream& o) {
  const auto lines = published_lines(r);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    o << (i == 0 ? "published            " : "                     ") << lines[i] << "\n";
  }
}

// The run's GPUs, the model and the plan (its sizes, then its options), and a blank line.
void write_header(const Report& r, std::ostringstream& o) {
  const auto& p = r.plan;
  o << "trainsim " << r.provenance.trainsim_version << ": " << r.model << " on " << r.platform
    << " (" << format_grouped(r.gpus) << (r.gpus == 1 ? " GPU, " : " GPUs, ")
    << format_grouped(r.nodes) << (r.nodes == 1 ? " node" : " nodes") << ")\n";
  if (!r.scenario.empty()) o << "scenario: " << r.scenario << "\n";
  o << "model: " << format_grouped(r.model_params) << " parameters";
  if (r.model_active_params != r.model_params) {
    o << ", " << format_grouped(r.model_active_params) << " active per token";
  }
  if (r.mtp_layers > 0) {
    o << "; " << r.mtp_layers << " multi-token-prediction module" << (r.mtp_layers == 1 ? "" : "s")
      << " with " << format_grouped(r.mtp_params) << " parameters more";
  }
  o << "\n";
  o << "plan: tp " << p.tp << ", pp " << p.pp;
  if (p.vp > 1) o << " x vp " << p.vp;
  o << ", dp " << p.dp << (p.sequence_parallel() ? " (sp)" : "");
  if (p.cp > 1) {
    o << ", cp " << p.cp << " (" << to_string(p.cp_comm);
    if (p.cp_comm == CpComm::kA2AP2P)
      o << ": a2a " << p.cp_a2a_size << " x p2p " << p.cp_ring_size();
    o << ")";
  }
  if (p.ep > 1) {
    o << ", ep " << p.ep;
    if (p.expert_tp() != p.tp) o << " (etp " << p.expert_tp() << ")";
  }
  o << ", mbs " << p.mbs << ", gbs " << p.global_batch() << ", seq " << p.seq_len;
  if (p.packs_documents()) o << " (packed documents of " << p.packed_document_tokens << ")";
  o << ", " << to_string(p.precision);
  if (p.fp8_recipe != Fp8Recipe::kDelayed) o << " (" << to_string(p.fp8_recipe) << " scaling)";
  o << ", " << to_string(p.schedule) << ", " << r.partition << " partition; " << r.microbatches
    << (r.microbatches == 1 ? " micro-batch per step" : " micro-batches per step")
    << (p.gbs > 0 ? "" : " (no --gbs: mbs x dp sequences, Megatron-LM's default)") << "\n";
  // Its options, as the plan schema describes them.
  const auto extras = plan_options_text(p);
  if (!extras.empty()) o << "      " << join(extras) << "\n";
  o << "\n";
}

// Step time, throughput, bubble and communication.
void write_summary(const Report& r, std::ostringstream& o) {
  o << "step time            " << format_step_time(r.step_time_s);
  if (r.step_time_p90_s > r.step_time_p10_s) {
    o << " (P10 " << format_step_time(r.step_time_p10_s) << ", P90 "
      << format_step_time(r.step_time_p90_s) << ": "
      << (r.band_weighted ? "the calibration's residuals scaled by the kernels' measured spread, " +
                                format_fixed(100 * r.kernel_spread, 1) + " % P10-P90"
                          : std::string("the platform calibration's residuals"))
      << ")";
  }
  o << "\n";
  write_published(r, o);
  o << "tokens/s             " << format_grouped(static_cast<std::int64_t>(r.tokens_per_s + 0.5))
    << " ("
    << format_grouped(static_cast<std::int64_t>(r.tokens_per_s / static_cast<double>(r.gpus) + 0.5))
    << " per GPU)\n";
  if (r.time_to_train) o << "time to train        " << time_to_train_text(*r.time_to_train) << "\n";
  if (r.time_to_train && r.time_to_train->failures) {
    o << "with failures        " << failures_text(*r.time_to_train->failures) << "\n";
  }
  o << "model TFLOP/s/GPU    " << format_fixed(r.model_tflops_per_gpu, 1) << "\n";
  o << "MFU                  " << format_percent(r.mfu) << "\n";
  o << pad_right(r.idle_name(), 21) << format_percent(r.bubble_fraction) << " of the step ("
    << (r.plan.pp > 1 ? "idle GPU time" : "waits on other GPUs; no pipeline") << ")\n";
  o << "exposed comm         ";
  bool any = false;
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    if (r.exposed_comm_s[k] <= 0) continue;
    if (any) o << ", ";
    o << to_string(static_cast<CommKind>(k)) << " " << format_seconds(r.exposed_comm_s[k]);
    any = true;
  }
  o << (any ? "" : "none") << " (mean per GPU)\n";
  any = false;
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    if (r.overlapped_comm_s[k] <= 0) continue;
    o << (any ? ", " : "overlapped comm      ") << to_string(static_cast<CommKind>(k)) << " "
      << format_seconds(r.overlapped_comm_s[k]);
    any = true;
  }
  if (any) o << " (hidden behind compute, mean per GPU)\n";
  o << "\n";
}

// Each stage's layers, parameters, pass times, peak memory and blocks.
void write_stages(const Report& r, std::ostringstream& o) {
  o << cell("stage", 7) << cell("layers", 8) << cell("params/GPU", 16) << cell("fwd/mb", 11)
    << cell("bwd/mb", 11) << cell("compute", 11) << cell("peak mem", 12) << "blocks\n";
  for (const auto& s : r.stages) {
    std::string blocks;
    for (const auto& c : s.chunks) {
      if (!blocks.empty()) blocks += " | ";
      blocks += c.empty() ? "(empty)" : join(c);
    }
    o << cell(std::to_string(s.index), 7) << cell(std::to_string(s.layers), 8)
      << cell(format_grouped(s.params_per_gpu), 16) << cell(format_seconds(s.forward_s), 11)
      << cell(format_seconds(s.backward_s + s.recompute_s), 11)
      << cell(format_seconds(s.compute_s), 11) << cell(format_bytes(s.peak_memory_bytes), 12)
      << (s.chunks.size() == 1 && s.chunks[0].empty() ? "(empty stage)" : blocks) << "\n";
  }
  if (const StageReport* most = stage_waiting_most(r)) {
    o << "fwd/mb and bwd/mb include each pass's wait for the calls beside its kernels, up to "
      << format_seconds(most->wait_s) << " a micro-batch (stage " << most->index
      << "); compute is the kernels alone\n";
  }
  o << "\n";
}

// Where each stage's peak goes, per GPU.
void write_memory(const Report& r, std::ostringstream& o) {
  o << cell("memory", 7) << cell("weights", 12) << cell("grads", 12) << cell("optimizer", 12)
    << cell("activations", 12) << cell("in flight", 11) << cell("runtime", 12) << "peak\n";
  for (const auto& s : r.stages) {
    const auto& m = s.memory;
    o << cell(std::to_string(s.index), 7) << cell(format_bytes(m.weights), 12)
      << cell(format_bytes(m.gradients), 12)
      << cell(format_bytes(m.master_weights + m.optimizer), 12)
      << cell(format_bytes(m.activations), 12) << cell(std::to_string(m.microbatches_in_flight), 11)
      << cell(format_bytes(m.runtime), 12) << format_bytes(s.peak_memory_bytes) << "\n";
  }
  for (const auto& s : r.stages) {
    const auto& m = s.memory;
    if (m.deferred_microbatches == 0) continue;
    o << "stage " << s.index << "'s activations at the peak include "
      << format_bytes(m.deferred_lm_head) << " of LM-head inputs and logits gradients kept for "
      << m.deferred_microbatches << " deferred weight gradient"
      << (m.deferred_microbatches == 1 ? "" : "s") << "\n";
  }
  o << "\n";
}

// The diagnostics with their fixes.
void write_diagnostics(const Report& r, std::ostringstream& o) {
  if (r.diagnostics.empty()) {
    o << "diagnostics: none\n";
  } else {
    o << "diagnostics:\n";
    for (const auto& d : r.diagnostics) {
      o << "  [" << to_string(d.severity) << "] " << d.id;
      if (d.stage) o << " (stage " << *d.stage << ")";
      o << ": " << d.message << "\n";
      if (!d.fix.empty()) o << "      fix: " << d.fix << "\n";
    }
  }
}

// Where the kernel times came from and how the engine replayed the GPUs.
void write_provenance(const Report& r, std::ostringstream& o) {
  o << "kernel times: ";
  bool first = true;
  for (TimeSource source : kTimeSources) {
    const char* src = to_string(source);
    double share = r.provenance.kernel_time_share.at(src);
    if (share <= 0) continue;
    if (!first) o << ", ";
    o << format_percent(share) << " " << src;
    first = false;
  }
  o << (first ? "none" : "") << "; engine " << r.provenance.engine;
  if (r.provenance.replayed_gpus < r.gpus) {
    o << " (symmetric: " << format_grouped(r.provenance.replayed_gpus) << " of "
      << format_grouped(r.gpus) << " GPUs replayed, one per pipeline stage"
      << (r.provenance.replayed_gpus > r.plan.pp ? " and class of pipeline route)" : ")");
  } else if (!r.provenance.why_full_replay.empty()) {
    o << " (every GPU replayed: " << r.provenance.why_full_replay << ")";
  }
  o << "\n";
}

}  // namespace

std::string report_text(const Report& r) {
  std::ostringstream o;
  write_header(r, o);
  write_summary(r, o);
  write_stages(r, o);
  write_memory(r, o);
  write_collectives(r, o);
  write_diagnostics(r, o);
  write_provenance(r, o);
  return o.str();
}

}  // namespace trainsim
