#pragma once
// Internal to sim/plan/megatron_args: the Megatron-LM arguments trainsim reads and the rules that
// turn them into plan fields, each family of arguments one method.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/plan/megatron_args.hpp"

namespace trainsim {

enum class Arity { kSwitch, kOne, kList };

/// How many values the argument takes, or nullopt where trainsim does not read it.
std::optional<Arity> megatron_arity(const std::string& name);
/// Whether `name` is one of Megatron-LM's arguments that lies within a typo of one trainsim reads.
bool megatron_near_but_real(const std::string& name);
/// Every argument trainsim reads (for near misses).
const std::vector<std::string>& megatron_arg_names();

/// Megatron-LM's arguments as argparse holds them: each name's values (the last occurrence wins).
using MegatronGiven = std::map<std::string, std::vector<std::string>>;

/// The arguments a launch gives, each message naming the launch (`where`) and the argument.
struct MegatronArgs {
  const MegatronGiven& given;
  const std::string& where;

  bool has(const std::string& arg) const { return given.contains(arg); }
  const std::string& one(const std::string& arg) const { return given.at(arg).front(); }
  std::int64_t integer(const std::string& arg) const;
  /// integer(arg), or `fallback` where the argument is not given.
  std::int64_t integer_or(const std::string& arg, std::int64_t fallback) const {
    return has(arg) ? integer(arg) : fallback;
  }
  [[noreturn]] void fail(const std::string& arg, const std::string& what) const;
};

/// The position embedding the launch names (--position-embedding-type, the legacy
/// --use-rotary-position-embeddings), none where it names none; InputError for a kind trainsim
/// does not model.
std::optional<PositionEmbedding> megatron_position_embedding(const MegatronArgs& args);
/// The model Megatron-LM builds from the shape arguments, named `name`, its vocabulary
/// `vocab_size` where given, else the tokenizer's (sim/plan/megatron_model.cpp).
Model megatron_model(const MegatronArgs& args, const std::string& name,
                     std::optional<std::int64_t> vocab_size = std::nullopt);

struct MegatronReader : MegatronArgs {
  const Model& model;
  MegatronPlan& out;

  /// Sets `field` to `value`, its origin the argument `arg`.
  void set(const std::string& field, const std::string& value, const std::string& arg);
  /// Sets `field` to Megatron-LM's default `value` where no argument set it, and says so.
  void by_default(const std::string& field, const std::string& value);

  void check_shapes() const;     // --num-layers, --hidden-size, ... against the model
  void direct_fields();          // arguments that copy to one field each
  void pipeline();               // virtual stages, p2p overlap, rank order
  void precision();              // --bf16, --fp16, --fp8-format, --fp8-recipe
  void recompute();              // --recompute-granularity, -method, -num-layers, -modules
  void optimizer();              // distributed and precision-aware optimizer
  void attention_and_context();  // --attention-backend, --cp-comm-type, hierarchical CP
  void experts();                // dispatcher
  void defaults();               // Megatron-LM's defaults that differ from trainsim's
};

}  // namespace trainsim
