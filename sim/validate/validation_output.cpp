#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/format.hpp"
#include "sim/core/percent.hpp"
#include "sim/core/units.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

std::string signed_mib(double bytes) {
  return format_signed_fixed(bytes / kMiB);
}

// Skipped rows, grouped by reason in order of first appearance.
void skipped_rows(const ValidationSet& set, std::ostringstream& o) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
  for (const auto& r : set.rows) {
    if (!r.skipped) continue;
    auto it = std::find_if(by_reason.begin(), by_reason.end(),
                           [&](const auto& g) { return g.first == *r.skipped; });
    if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {*r.skipped, {}});
    it->second.push_back(r.name);
  }
  if (by_reason.empty()) return;
  o << "## Skipped rows\n\n| reason | rows |\n|---|---|\n";
  for (const auto& [reason, names] : by_reason) {
    o << "| " << reason << " | " << names.size() << ": ";
    for (std::size_t i = 0; i < names.size(); ++i) o << (i ? ", " : "") << names[i];
    o << " |\n";
  }
  o << "\n";
}

std::string errors_text(const ValidationSet::Errors& e) {
  return std::to_string(e.rows) + " rows: " + format_percent(e.mean) + ", max " +
         format_percent(e.max);
}

// The row's name with the letter of its note, the note added to `notes` on first use.
std::string noted_name(const ValidationRow& r, std::vector<std::string>& notes) {
  if (r.note.empty()) return r.name;
  auto it = std::find(notes.begin(), notes.end(), r.note);
  if (it == notes.end()) it = notes.insert(notes.end(), r.note);
  return r.name + " (" + static_cast<char>('a' + (it - notes.begin())) + ")";
}

void footnotes(const std::vector<std::string>& notes, std::ostringstream& o) {
  for (std::size_t i = 0; i < notes.size(); ++i) {
    o << "(" << static_cast<char>('a' + i) << ") " << notes[i] << ".\n";
  }
  if (!notes.empty()) o << "\n";
}

// Rows in no half of a split (a set reported apart from the accuracy targets): "-".
void time_markdown(const ValidationSet& set, std::ostringstream& o) {
  o << "| row | run | half | measured s | predicted s | error |\n";
  o << "|---|---|---|---|---|---|\n";
  bool split = false;
  std::vector<std::string> notes;
  for (const auto& r : set.rows) {
    if (r.skipped) continue;
    split = split || !r.half.empty();
    o << "| " << noted_name(r, notes) << " | " << r.setup << " | "
      << (r.half.empty() ? "-" : r.half) << " | " << format_fixed(r.measured, 3) << " | "
      << format_fixed(r.predicted, 3) << " | " << format_signed_percent(r.error()) << " |\n";
  }
  o << "\n";
  footnotes(notes, o);
  o << set.expressed() << " of " << set.rows.size() << " rows expressed.\n\n";
  o << "Mean and max absolute error:\n\n";
  if (split) {
    o << "| rows | all | fitting half | checking half |\n|---|---|---|---|\n";
  } else {
    o << "| rows | all |\n|---|---|\n";
  }
  for (const char* part : {"", "BF16", "FP8", "(MoE)"}) {
    if (*part && set.errors_of(part, "").rows == 0) continue;
    const std::string label = *part == '\0' ? "all" : *part == '(' ? "MoE" : part;
    o << "| " << label << " | " << errors_text(set.errors_of(part, ""));
    if (split) {
      o << " | " << errors_text(set.errors_of(part, "fit")) << " | "
        << errors_text(set.errors_of(part, "check"));
    }
    o << " |\n";
  }
  if (!split && set.expressed() > 0) {
    const double bias = set.mean_signed_error();
    o << "\nMean signed error: " << format_signed_percent(bias)
      << " (predicted over measured, less 1, averaged: on the whole trainsim predicts these runs "
      << (bias < 0 ? "faster" : "slower") << " than they ran).\n";
  }
  if (!set.band.empty()) {
    o << "\nThe band of the platform's calibration (the prediction ";
    if (set.band.weighted()) {
      o << "times 1 + q x the P10-P90 width of its kernels' measured spread, q from "
        << format_fixed(set.band.per_spread_p10, 2) << " to "
        << format_fixed(set.band.per_spread_p90, 2) << "; " << format_signed_percent(set.band.p10)
        << " to " << format_signed_percent(set.band.p90)
        << " where no kernel has a measured spread";
    } else {
      o << format_signed_percent(set.band.p10) << " to " << format_signed_percent(set.band.p90);
    }
    o << ") holds the measured step on ";
    if (split) {
      const auto [fit_in, fit_rows] = set.in_band("fit");
      const auto [check_in, check_rows] = set.in_band("check");
      o << fit_in << " of " << fit_rows << " fitting rows and " << check_in << " of " << check_rows
        << " checking rows.\n";
    } else {
      const auto [in, rows] = set.in_band("");
      o << in << " of " << rows << " rows.\n";
    }
  }
  o << "\n";
}

// Step time: the runs ran, so each plan's predicted peak should fit its GPU, at least without the
// allocator fragmentation the platform assumes (else `check` calls it an oom error).
void runs_in_memory(const ValidationSet& set, std::ostringstream& o) {
  std::int64_t predicted = 0;
  for (const auto& r : set.rows) predicted += !r.skipped && r.peak_bytes > 0 ? 1 : 0;
  if (predicted == 0) return;
  const auto tight = set.rows_whose_memory(MemoryFit::kTight);
  const auto certain = set.rows_whose_memory(MemoryFit::kOver);
  const auto names = [](const std::vector<const ValidationRow*>& rows, bool unfragmented) {
    std::string s;
    for (const ValidationRow* r : rows) {
      const double peak = unfragmented ? r->peak_unfragmented_bytes : r->peak_bytes;
      s += (s.empty() ? "" : ", ") + r->name + " (" + format_bytes(peak) + ")";
    }
    return s;
  };
  o << "Peak memory per GPU of these runs, which ran (the worst stage, predicted): "
    << predicted - static_cast<std::int64_t>(tight.size() + certain.size()) << " of " << predicted
    << " within the GPU's " << format_bytes(set.gpu_memory_bytes) << "; " << tight.size()
    << " over it only with the allocator fragmentation the platform assumes (an oom warning)";
  if (!tight.empty()) o << ": " << names(tight, false);
  o << "; " << certain.size() << " over it even without (an oom error)";
  if (!certain.empty()) o << ": " << names(certain, true);
  o << ".\n\n";
}

// The allocated bytes after the step hold no activations: where they miss, the state or the
// buffers a run keeps do, whatever the peak says.
void after_step_summary(const ValidationSet& set, std::ostringstream& o) {
  constexpr double kClose = 25 * kMiB;
  const auto residuals = set.after_step_residuals();
  if (residuals.empty()) return;
  double low = residuals.front().second, high = low;
  std::vector<std::string> beyond;
  for (const auto& [row, d] : residuals) {
    low = std::min(low, d);
    high = std::max(high, d);
    if (std::fabs(d) > kClose) beyond.push_back(row->name + " (" + signed_mib(d) + " MiB)");
  }
  o << "After the step (mem-allocated-bytes, torch.cuda.memory_allocated logged by the same rank: "
       "model state and the buffers the run keeps, no activations; predicted: the stage's state "
       "and allocated runtime), measured minus predicted on "
    << residuals.size() << " rows: median " << signed_mib(set.after_step_median()) << " MiB, from "
    << signed_mib(low) << " to " << signed_mib(high) << " MiB; within 25 MiB on "
    << residuals.size() - beyond.size();
  if (!beyond.empty()) {
    o << "; beyond it: ";
    for (std::size_t i = 0; i < beyond.size(); ++i) o << (i ? ", " : "") << beyond[i];
  }
  o << ".\n\n";
}

void memory_markdown(const ValidationSet& set, std::ostringstream& o) {
  o << "| test case | run | stage | measured GiB | predicted GiB | error | after step: measured - "
       "predicted MiB |\n";
  o << "|---|---|---|---|---|---|---|\n";
  std::vector<std::string> notes;
  for (const auto& r : set.rows) {
    if (r.skipped) continue;
    o << "| " << noted_name(r, notes) << " | " << r.setup << " | " << r.stage << " | "
      << format_fixed(r.measured / kGiB, 3) << " | " << format_fixed(r.predicted / kGiB, 3) << " | "
      << format_signed_percent(r.error()) << " | "
      << (r.logs_after_step() ? signed_mib(r.after_step_residual()) : std::string("-")) << " |\n";
  }
  o << "\n";
  footnotes(notes, o);
  const auto* worst = set.worst();
  o << set.expressed() << " of " << set.rows.size() << " rows expressed: mean |error| "
    << format_percent(set.mean_abs_error()) << ", max |error| "
    << (worst ? format_percent(std::fabs(worst->error())) + " (" + worst->name + ")" : "n/a")
    << ".\n\n";
  after_step_summary(set, o);
  o << "Calibration: measured minus predicted without the platform's allocated overhead ("
    << format_fixed(set.allocated_overhead / kMiB, 1) << " MiB in " << set.platform
    << "), median over the expressed rows";
  if (set.overhead_fit_rows() < set.expressed()) {
    o << " of dense models (" << set.overhead_fit_rows()
      << "; a mixture-of-experts row's residual also holds the routing imbalance its run's data "
         "decided)";
  }
  o << ": " << format_fixed(set.overhead_fit() / kMiB, 1)
    << " MiB. That median is the fit of memory.allocated_overhead_MiB: one number for every "
       "row. ";
  const auto [loo_mean, loo_max] = set.leave_one_out_errors();
  o << "Out of sample (each row predicted with the median fit on the other rows only): mean "
       "|error| "
    << format_percent(loo_mean) << ", max |error| " << format_percent(loo_max) << ". ";
  const auto [bare_mean, bare_max] = set.errors_without_overhead();
  o << "Without the overhead term: mean |error| " << format_percent(bare_mean) << ", max |error| "
    << format_percent(bare_max) << ".\n\n";
}

}  // namespace

std::string validation_markdown(const std::vector<ValidationSet>& sets) {
  std::ostringstream o;
  for (const auto& set : sets) {
    o << "# trainsim validate: " << set.reference << ", "
      << (set.quantity == Quantity::kStepTime ? "step time" : "peak memory") << "\n\n";
    o << set.metric << ". Platform " << set.platform << ".\n\n";
    if (set.quantity == Quantity::kStepTime) {
      time_markdown(set, o);
      runs_in_memory(set, o);
    } else {
      memory_markdown(set, o);
    }
    skipped_rows(set, o);
  }
  return o.str();
}

namespace {

using J = nlohmann::ordered_json;

J row_json(const ValidationSet& set, const ValidationRow& r) {
  J row{{"name", r.name}};
  if (r.skipped) {
    row["skipped"] = *r.skipped;
    return row;
  }
  row["setup"] = r.setup;
  if (set.quantity == Quantity::kStepTime) {
    row["half"] = r.half;
    row["measured_s"] = r.measured;
    row["predicted_s"] = r.predicted;
    row["kernel_spread"] = r.kernel_spread;
    if (r.peak_bytes > 0) {
      row["peak_memory_bytes"] = std::llround(r.peak_bytes);
      row["peak_unfragmented_bytes"] = std::llround(r.peak_unfragmented_bytes);
      row["memory_fit"] =
          to_string(memory_fit(r.peak_bytes, r.peak_unfragmented_bytes, set.gpu_memory_bytes));
    }
    if (!set.band.empty()) {
      row["p10_s"] = set.band.low(r.predicted, r.kernel_spread);
      row["p90_s"] = set.band.high(r.predicted, r.kernel_spread);
    }
  } else {
    row["stage"] = r.stage;
    row["measured_bytes"] = std::llround(r.measured);
    row["predicted_bytes"] = std::llround(r.predicted);
    if (r.logs_after_step()) {
      row["measured_after_step_bytes"] = std::llround(r.measured_after_step);
      row["predicted_after_step_bytes"] = std::llround(r.predicted_after_step);
    }
  }
  row["error"] = r.error();
  if (!r.note.empty()) row["note"] = r.note;
  return row;
}

// A step-time set's band and its halves' errors; a memory set's overhead fit.
void add_set_summary(const ValidationSet& set, J& j) {
  if (set.quantity == Quantity::kStepTime) {
    j["band"] = {{"residual_p10", set.band.p10},
                 {"residual_p90", set.band.p90},
                 {"residual_per_spread_p10", set.band.per_spread_p10},
                 {"residual_per_spread_p90", set.band.per_spread_p90}};
    j["gpu_memory_bytes"] = std::llround(set.gpu_memory_bytes);
    for (const char* half : {"fit", "check"}) {
      const auto e = set.errors_of("", half);
      const auto [inside, total] = set.in_band(half);
      j["halves"][half] = {{"rows", e.rows},
                           {"mean_abs_error", e.mean},
                           {"max_abs_error", e.max},
                           {"in_band", inside}};
    }
    return;
  }
  j["allocated_overhead_bytes"] = std::llround(set.allocated_overhead);
  j["overhead_fit_bytes"] = std::llround(set.overhead_fit());
  j["overhead_fit_rows"] = set.overhead_fit_rows();
  const auto [loo_mean, loo_max] = set.leave_one_out_errors();
  j["leave_one_out_mean_abs_error"] = loo_mean;
  j["leave_one_out_max_abs_error"] = loo_max;
  const auto [bare_mean, bare_max] = set.errors_without_overhead();
  j["mean_abs_error_without_overhead"] = bare_mean;
  j["max_abs_error_without_overhead"] = bare_max;
}

}  // namespace

std::string validation_json(const std::vector<ValidationSet>& sets) {
  J out = J::array();
  for (const auto& set : sets) {
    J rows = J::array();
    for (const auto& r : set.rows) rows.push_back(row_json(set, r));
    const auto* worst = set.worst();
    J j{{"reference", set.reference},
        {"quantity", set.quantity == Quantity::kStepTime ? "step_time" : "peak_memory"},
        {"metric", set.metric},
        {"platform", set.platform},
        {"expressed", set.expressed()},
        {"rows_total", set.rows.size()},
        {"mean_abs_error", set.mean_abs_error()},
        {"mean_signed_error", set.mean_signed_error()},
        {"max_abs_error", worst ? std::fabs(worst->error()) : 0.0}};
    add_set_summary(set, j);
    j["rows"] = std::move(rows);
    out.push_back(std::move(j));
  }
  return J{{"validation", std::move(out)}}.dump(2) + "\n";
}

}  // namespace trainsim
