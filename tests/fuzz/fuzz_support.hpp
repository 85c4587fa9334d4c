#pragma once
// What the fuzz targets share. Bad input must end in InputError, the expected outcome, which
// expect_input_errors() swallows; any other exception escapes to libFuzzer, which reports it as
// a crash, as it does a sanitizer report, an assert or a hang (-timeout).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "sim/core/error.hpp"
#include "sim/model/model.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim::fuzz {

/// Runs `body`; InputError is the answer to bad input and ends the run quietly.
template <class Body>
int expect_input_errors(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
  }
  return 0;  // libFuzzer: keep the input if it found new coverage
}

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Reads every catalog model and platform into the cache before the first input (a target's
/// LLVMFuzzerInitialize): a platform's kernel database, megabytes of JSON, takes seconds to
/// parse under the sanitizers, which the per-input timeout would report as a hang of whichever
/// input first names it.
void warm_catalog();

/// A directory of this process's own under the system's temporary directory (a later fuzzer
/// process removes it).
const std::filesystem::path& scratch_dir();
/// Writes `bytes` to `name` under scratch_dir() and returns its path (for readers of files).
std::filesystem::path write_scratch(const std::string& name, std::string_view bytes);

/// A catalog for targets that read it for every input (resolve_inputs): the repository's models
/// and scenario models, and its platforms with the small published kernel database in place of
/// the measured ones, which, parsed for every input, would take most of the time. Made once
/// under scratch_dir() and set as TRAINSIM_DATA_DIR; returns its directory.
const std::filesystem::path& light_catalog();

/// The repository's models (models/, then the seed scenarios' and the tests' models) and
/// platforms (kernel databases included) by name, each read once per process. InputError for a
/// name it lacks.
const Model& catalog_model(const std::string& name);
const Platform& catalog_platform(const std::string& name);

/// The plan that plan fields set (each as its flag takes it, at its origin), dp from a GPU count
/// where dp is not set, checked for `model` on h100-sxm-ndr as resolve_inputs() checks it (the
/// launch readers' targets).
void check_plan_of_fields(const std::map<std::string, std::string>& fields,
                          const std::map<std::string, std::string>& origins, const Model& model);

}  // namespace trainsim::fuzz
