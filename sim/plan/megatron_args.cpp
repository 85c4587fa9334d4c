#include "sim/plan/megatron_args.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/plan/launch_script.hpp"
#include "sim/plan/megatron_arg_table.hpp"

namespace trainsim {

namespace {

// The words up to the last one naming a Python script (torchrun and its options, the script),
// and the script's arguments.
LaunchCommand split_at_script(const std::vector<std::string>& words) {
  LaunchCommand launch;
  const auto script = std::find_if(words.rbegin(), words.rend(),
                                   [](const std::string& w) { return w.ends_with(".py"); });
  const auto first = script == words.rend() ? words.begin() : script.base();
  launch.launcher.assign(words.begin(), first);
  launch.args.assign(first, words.end());
  return launch;
}

}  // namespace

LaunchCommand parse_launch_command(std::string_view text, const std::string& where) {
  const ScriptLaunch script = read_launch_script(text, where);
  LaunchCommand launch = split_at_script(script.words);
  for (const auto& a : script.alternatives) {
    launch.alternatives.push_back(split_at_script(a.words));
    launch.alternatives.back().undecided_lines = a.lines;
  }
  launch.undecided_lines = script.undecided_lines;
  return launch;
}

namespace {

using Given = MegatronGiven;

// An argument trainsim does not read: set aside where it is a near miss of one it does.
void unread(const std::string& name, const std::string& where, MegatronPlan& out) {
  if (const auto near = nearest_name(name, megatron_arg_names());
      near && *near != name && !megatron_near_but_real(name)) {
    fail_input(where + " " + name, "not an argument trainsim reads; did you mean " + *near + "?");
  }
  out.unread.push_back(name);
}

Given read_words(const std::vector<std::string>& words, const std::string& where,
                 MegatronPlan& out) {
  Given given;
  for (std::size_t i = 0; i < words.size();) {
    std::string name = words[i++];
    if (!name.starts_with("--")) {
      fail_input(where, "expected an argument (--name), got '" + name + "'");
    }
    std::vector<std::string> values;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      values.push_back(name.substr(eq + 1));
      name.resize(eq);
    }
    while (i < words.size() && !words[i].starts_with("--")) values.push_back(words[i++]);
    const std::optional<Arity> arity = megatron_arity(name);
    if (!arity) {
      unread(name, where, out);
      continue;
    }
    const std::string at = where + " " + name;
    for (const auto& v : values) {
      if (v.find('$') != std::string::npos) {
        fail_input(at, "'" + v + "' is a shell variable: give its value (trainsim runs no shell)");
      }
    }
    if (*arity == Arity::kSwitch && !values.empty()) fail_input(at, "takes no value");
    if (*arity == Arity::kOne && values.size() != 1) fail_input(at, "takes one value");
    if (*arity == Arity::kList && values.empty()) fail_input(at, "takes one value or more");
    given[name] = values;
  }
  return given;
}

// A GPU count from a launcher's option: a whole number from 1 to 2^20, else none (torchrun's
// "gpu" or "auto", an elastic "1:4", a shell variable).
std::optional<std::int64_t> gpu_count(const std::string& text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > (1 << 20)) {
    return std::nullopt;
  }
  return v;
}

// torchrun's (or python -m torch.distributed.run's) GPUs: --nproc-per-node (or _) x --nnodes.
void launcher_gpus(const std::vector<std::string>& launcher, const std::string& where,
                   MegatronPlan& out) {
  std::map<std::string, std::string> options;
  for (std::size_t i = 0; i < launcher.size(); ++i) {
    std::string name = launcher[i];
    if (!name.starts_with("--")) continue;
    std::string value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < launcher.size() && !launcher[i + 1].starts_with("-")) {
      value = launcher[i + 1];
    }
    std::replace(name.begin(), name.end(), '_', '-');
    options[name] = value;
  }
  if (!options.contains("--nproc-per-node")) return;
  const auto per_node = gpu_count(options["--nproc-per-node"]);
  const auto nodes = options.contains("--nnodes") ? gpu_count(options["--nnodes"]) : 1;
  if (!per_node || !nodes || *per_node * *nodes > (1 << 20)) return;
  out.fields["gpus"] = std::to_string(*per_node * *nodes);
  out.origin["gpus"] = where + " torchrun --nproc-per-node x --nnodes";
}

// Where the script's undecided tests could go another way: refused unless the arguments trainsim
// reads, and the GPU count, are the same that way.
void same_either_way(const LaunchCommand& launch, const LaunchCommand& other, const Given& given,
                     const MegatronPlan& out, const std::string& where) {
  MegatronPlan scratch;
  launcher_gpus(other.launcher, where, scratch);
  const Given theirs = read_words(other.args, where, scratch);
  std::string differs;
  if (scratch.fields.contains("gpus") != out.fields.contains("gpus") ||
      (out.fields.contains("gpus") && scratch.fields.at("gpus") != out.fields.at("gpus"))) {
    differs = "the GPU count (torchrun --nproc-per-node x --nnodes)";
  }
  for (const Given* g : {&given, &theirs}) {
    for (const auto& [name, values] : *g) {
      const Given& h = g == &given ? theirs : given;
      if (differs.empty() && (!h.contains(name) || h.at(name) != values)) differs = name;
    }
  }
  if (differs.empty()) return;
  // The tests that go otherwise for `other` (all undecided ones where none is known).
  const auto& at = other.undecided_lines.empty() ? launch.undecided_lines : other.undecided_lines;
  std::vector<std::string> lines;
  for (const int line : at) lines.push_back(std::to_string(line));
  const bool one = at.size() == 1;
  fail_input(where, std::string(one ? "the test at line " : "the tests at lines ") +
                        and_list(lines) + (one ? " depends" : " depend") +
                        " on what the script cannot know (the environment, a file, a command's "
                        "output), and " +
                        differs +
                        " differs with it: trainsim runs no shell; give that value in the script");
}

// The script's arguments and torchrun's GPU count, the same whichever way its undecided tests go.
Given read_launch(const LaunchCommand& launch, const std::string& where, MegatronPlan& out) {
  launcher_gpus(launch.launcher, where, out);
  const Given given = read_words(launch.args, where, out);
  for (const LaunchCommand& other : launch.alternatives)
    same_either_way(launch, other, given, out, where);
  return given;
}

}  // namespace

Model model_from_megatron_args(const LaunchCommand& launch, const std::string& name,
                               const std::string& where) {
  MegatronPlan scratch;
  const Given given = read_launch(launch, where, scratch);
  return megatron_model(MegatronArgs{given, where}, name);
}

Model model_from_megatron_args(const std::map<std::string, std::vector<std::string>>& args,
                               const std::string& name, const std::string& where,
                               std::optional<std::int64_t> vocab_size) {
  return megatron_model(MegatronArgs{args, where}, name, vocab_size);
}

MegatronPlan plan_from_megatron_args(const LaunchCommand& launch, const Model& model,
                                     const std::string& where) {
  MegatronPlan out;
  const Given given = read_launch(launch, where, out);
  MegatronReader r{{given, where}, model, out};
  r.check_shapes();
  r.direct_fields();
  r.pipeline();
  r.precision();
  r.recompute();
  r.optimizer();
  r.attention_and_context();
  r.experts();
  r.defaults();
  return out;
}

}  // namespace trainsim
