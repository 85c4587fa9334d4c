#include "sim/sweep/sweep_csv.hpp"

#include <charconv>

#include "sim/core/format.hpp"
#include "sim/core/units.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/report/report.hpp"

namespace trainsim {

namespace {

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string cell(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

}  // namespace

const std::vector<std::string>& sweep_csv_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> c = {"index", "platform", "gpus"};
    // A report's plan fields, blank where the report leaves one out (an option of another mode).
    for (const auto& p : plan_json_keys()) c.push_back(p);
    for (const char* s : {"status", "reason", "step_s", "step_p10_s", "step_p90_s", "tokens_per_s",
                          "tflops_per_gpu", "mfu", "peak_memory_gib", "diagnostics", "days",
                          "gpu_hours", "cost", "days_with_failures", "lost_to_failures",
                          "gpu_hours_with_failures", "cost_with_failures"}) {
      c.emplace_back(s);
    }
    return c;
  }();
  return columns;
}

std::string sweep_csv_header() {
  return join(sweep_csv_columns(), ",") + "\n";
}

std::string sweep_csv_line(const SweepRow& row, const TrainingBudget& budget) {
  std::vector<std::string> f = {std::to_string(row.index), quoted(row.platform),
                                std::to_string(row.gpus)};
  const nlohmann::ordered_json plan =
      row.plan ? plan_json(*row.plan) : nlohmann::ordered_json::object();
  // Quoted where a value holds a comma (recompute_modules' list).
  for (const auto& key : plan_json_keys()) {
    f.push_back(plan.contains(key) ? quoted(cell(plan[key])) : "");
  }
  const bool priced = row.status == SweepStatus::kOk;
  f.push_back(to_string(row.status));
  f.push_back(quoted(row.reason));
  for (const auto& [v, d] : {std::pair{row.step_s, 6},
                             {row.step_p10_s, 6},
                             {row.step_p90_s, 6},
                             {row.tokens_per_s, 1},
                             {row.tflops_per_gpu, 2},
                             {row.mfu, 4}}) {
    f.push_back(priced ? format_fixed(v, d) : "");
  }
  f.push_back(row.peak_bytes ? format_fixed(*row.peak_bytes / kGiB, 3) : "");
  f.push_back(join(row.diagnostics, ";"));
  std::optional<TimeToTrain> run;
  if (priced && row.plan) {
    run = time_to_train(budget, static_cast<double>(row.plan->tokens_per_step()), row.step_s,
                        row.step_p10_s, row.step_p90_s, row.gpus);
  }
  f.push_back(run ? format_fixed(run->days(), 3) : "");
  f.push_back(run ? format_fixed(run->gpu_hours, 0) : "");
  f.push_back(run && run->cost ? format_fixed(*run->cost, 0) : "");
  // With failures: the wall-clock days, the share lost, the GPU-hours and their cost ("inf", 1,
  // "inf" and "inf" for a job that never ends).
  const FailureCost* failures = run && run->failures ? &*run->failures : nullptr;
  if (!failures) {
    f.insert(f.end(), {"", "", "", ""});
  } else if (failures->finishes) {
    f.insert(f.end(), {format_fixed(failures->days(), 3), format_fixed(failures->lost, 4),
                       format_fixed(failures->gpu_hours, 0),
                       failures->cost ? format_fixed(*failures->cost, 0) : ""});
  } else {
    f.insert(f.end(), {"inf", "1", "inf", run->cost ? "inf" : ""});
  }
  return join(f, ",") + "\n";
}

std::vector<std::string> split_csv_line(std::string_view line) {
  std::vector<std::string> out(1);
  bool in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      in_quotes = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::optional<std::int64_t> sweep_csv_index(std::string_view line) {
  const auto fields = split_csv_line(line);
  if (fields.size() != sweep_csv_columns().size()) return std::nullopt;
  std::int64_t index = -1;
  const std::string& first = fields.front();
  auto [ptr, ec] = std::from_chars(first.data(), first.data() + first.size(), index);
  if (ec != std::errc() || ptr != first.data() + first.size() || index < 0) return std::nullopt;
  return index;
}

}  // namespace trainsim
