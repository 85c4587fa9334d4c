#pragma once
// A sweep's CSV: one line per plan, its index first, its platform, every plan field, what became
// of it and its figures. Lines are written whole and read back by the same rules, so that an
// interrupted sweep resumes from its partial file and shards merge into the unsharded run's bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/report/time_to_train.hpp"
#include "sim/sweep/sweep_row.hpp"

namespace trainsim {

/// The column names, in order.
const std::vector<std::string>& sweep_csv_columns();
/// The header line (with its newline).
std::string sweep_csv_header();
/// A row as one CSV line (with its newline).
std::string sweep_csv_line(const SweepRow& row, const TrainingBudget& budget);

/// Splits a CSV line (without its newline) into fields, RFC 4180 quoting.
std::vector<std::string> split_csv_line(std::string_view line);
/// The index of a complete row line (the right number of fields, an index first); nullopt for
/// anything else (a line cut short by a kill, a header).
std::optional<std::int64_t> sweep_csv_index(std::string_view line);

}  // namespace trainsim
