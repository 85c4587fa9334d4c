#pragma once
// A plan from Megatron-LM's launch arguments (pretrain_gpt.py's, as a launch script passes them):
// the parallel sizes, batch, schedule, recomputation, precision, optimizer, overlaps and MoE
// options each set the plan field that prices them, with Megatron-LM's own defaults where the
// arguments say nothing and trainsim's differ (hidden and attention dropout 0.1; for an MoE model
// the allgather dispatcher and sequential experts). Shape arguments (--num-layers, ...) are
// checked against the model. Arguments that set nothing trainsim prices (learning rate, data,
// logging) are listed, not refused, unless one is a near miss of an argument trainsim reads.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/model.hpp"

namespace trainsim {

struct MegatronPlan {
  std::map<std::string, std::string> fields;  // plan field -> value as its flag takes it
  std::map<std::string, std::string> origin;  // plan field -> what set it ("--megatron-args --x")
  std::vector<std::string> defaults;  // Megatron-LM's defaults applied ("hidden_dropout 0.1")
  std::vector<std::string> unread;    // arguments given that set nothing priced
};

/// A launch command's words, split as a shell would: backslash-newlines joined, # to the end of a
/// line dropped, single and double quotes removed. `launcher`: the words up to the last one
/// ending in ".py" (torchrun and its options, the script); `args`: the script's arguments, up to
/// a pipe, a redirection or a command separator.
struct LaunchCommand {
  std::vector<std::string> launcher;
  std::vector<std::string> args;
  /// Where the script's tests cannot all be decided (sim/plan/launch_script.hpp): the launch
  /// under the other ways they could go, and the lines of those tests.
  std::vector<LaunchCommand> alternatives;
  std::vector<int> undecided_lines;
};
/// InputError at `where` for an unclosed quote.
LaunchCommand parse_launch_command(std::string_view text, const std::string& where);

/// The model Megatron-LM builds from the launch command's shape arguments, named `name`: its
/// defaults where they say nothing (a GeLU MLP of 4 x hidden, learned positions, LayerNorm,
/// biases, tied embeddings; top-2 experts as wide as the MLP), the vocabulary of the null
/// tokenizer (--vocab-size) or GPT-2's BPE (50,257). InputError naming `where` and the
/// argument for a shape missing, a tokenizer whose vocabulary is in a file, or what trainsim's
/// models cannot hold (another position embedding or norm).
Model model_from_megatron_args(const LaunchCommand& launch, const std::string& name,
                               const std::string& where);

/// The same from arguments already split (each name's values, a switch with none), with the
/// vocabulary `vocab_size` where it is known apart from the tokenizer (a CI row's record of it).
Model model_from_megatron_args(const std::map<std::string, std::vector<std::string>>& args,
                               const std::string& name, const std::string& where,
                               std::optional<std::int64_t> vocab_size);

/// The plan fields a launch command sets for `model`: the script's arguments (Megatron-LM's),
/// and the GPU count torchrun's --nproc-per-node x --nnodes gives. Where the script's undecided
/// tests change an argument trainsim reads (or the GPU count), InputError naming the tests'
/// lines and the argument; where they change only others, the plan is the same either way.
/// InputError naming `where` and the argument for one trainsim cannot price as given (--fp16, the
/// flex dispatcher, partial recomputation), a shape the model does not have, a shell variable where
/// trainsim needs the value, or a misspelt argument.
MegatronPlan plan_from_megatron_args(const LaunchCommand& launch, const Model& model,
                                     const std::string& where);

}  // namespace trainsim
