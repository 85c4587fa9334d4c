#pragma once
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/scenario.hpp"
#include "sim/core/catalog.hpp"

namespace trainsim {

struct RunOptions {
  InputRequest inputs;
  std::optional<std::string> out_dir;
  std::string format = "text";
  bool strict = false;
  std::optional<std::string> dump_graph;
  std::optional<std::string> trace;          // Chrome trace of the replay
  std::optional<std::string> svg;            // pipeline diagram of the replay
  std::optional<std::string> html;           // the report as one self-contained page
  std::optional<std::string> save_scenario;  // the resolved inputs as a scenario file
  bool full_simulation = false;              // replay every GPU even where symmetry allows fewer
  bool help = false;
};

struct ValidateOptions {
  std::vector<std::string> references;  // empty: the default reference set
  std::optional<std::string> platform;  // default: each reference set's own
  std::string format = "text";
  std::optional<std::string> out;
  std::int64_t jobs = 1;  // scenarios replayed on SimGrid at once, each in its own process
  bool help = false;
};

struct ReshardOptions {
  std::optional<std::string> model;
  std::optional<std::string> from;  // "tp=2,pp=1,dp=4"
  std::optional<std::string> to;
  std::optional<std::string> framework;  // megatron (default), nanotron, deepspeed, colossalai
  std::optional<std::string> vocab_divisible_by;
  std::string platform = kDefaultPlatform;
  std::optional<std::string> checkpoint;  // a directory
  std::string format = "text";
  bool help = false;
};

/// Parses the arguments of `reshard` (after the command word); InputError naming the flag.
ReshardOptions parse_reshard_options(const std::vector<std::string>& args);
std::string reshard_help();

/// Parses the arguments of `validate` (after the command word).
ValidateOptions parse_validate_options(const std::vector<std::string>& args);
std::string validate_help();

/// Parses the arguments of `run` or `check` (after the command word). InputError naming the
/// flag on bad usage.
RunOptions parse_run_options(const std::string& command, const std::vector<std::string>& args);

/// The --help text of `run` / `check`.
std::string run_help(const std::string& command);
std::string top_help();

}  // namespace trainsim
