#pragma once
// Validation rows priced in parallel over the machine's cores: each row is an independent
// prediction, and a reference set of 173 rows with plan searches takes seconds on one core.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/interrupt.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

/// row(json, "$.<key>[i]") for every row of the array `rows` (each must be an object), on up to
/// hardware_concurrency threads; the rows in file order. An exception from any row (a malformed
/// one) is rethrown after all finish: the one of the first such row, so the error is the same
/// however the rows were scheduled.
template <class Row>
std::vector<ValidationRow> parallel_rows(const nlohmann::json& rows, const std::string& file,
                                         Row&& row, const std::string& key = "rows") {
  std::vector<std::pair<const nlohmann::json*, std::string>> todo;
  for_each_row(
      rows, file,
      [&](const nlohmann::json& j, const std::string& path) { todo.emplace_back(&j, path); }, key);
  std::vector<ValidationRow> out(todo.size());
  std::vector<std::exception_ptr> errors(todo.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < todo.size(); i = next++) {
      try {
        out[i] = row(*todo[i].first, todo[i].second);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::size_t threads =
      std::min<std::size_t>(todo.size(), std::max(1U, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.push_back(thread_without_interrupts(work));
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace trainsim
