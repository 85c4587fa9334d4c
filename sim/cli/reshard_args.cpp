// `trainsim reshard`'s flags: one list that parses them and that --help prints.
#include <boost/program_options.hpp>
#include <sstream>

#include "sim/cli/args.hpp"
#include "sim/cli/command_line.hpp"
#include "sim/core/error.hpp"

namespace po = boost::program_options;

namespace trainsim {

namespace {

po::options_description reshard_flags() {
  auto text = [](const char* name) { return po::value<std::string>()->value_name(name); };
  po::options_description d("Flags", kHelpWidth, kHelpDescriptionWidth);
  d.add_options()("help,h", "show this help")(
      "model", text("M"), "a name under models/ or a config.json path (required)")(
      "from", text("LAYOUT"),
      "the checkpoint's layout, e.g. tp=2,pp=1,dp=4 (required); keys: tp, pp, dp, zero (0-3, 1 = "
      "distributed optimizer), vp (interleaved model chunks), cp (its ranks hold the same "
      "weights; a distributed optimizer shards over dp x cp), ep (a routed expert on one EP "
      "rank; with a distributed optimizer its state shards over the expert-data-parallel "
      "group), etp (expert TP; default tp), vocab-divisible-by (this layout's padding multiple)")(
      "to", text("LAYOUT"), "the layout to resume under (required)")(
      "framework", text("F"),
      "whose rules apply: megatron (default; uniform partition, vocabulary padded to a multiple "
      "of 128 x tp), nanotron (its cost-walk partition, 1 x tp), deepspeed (partition_method "
      "parameters, 128 x tp), colossalai (uniform, 64 x tp)")(
      "vocab-divisible-by", text("N"),
      "pad to a multiple of N x tp in both layouts (default: the framework's)")(
      "checkpoint", text("DIR"),
      "read the saved shapes of a checkpoint on disk and compare: safetensors headers (with "
      "model.safetensors.index.json as Hugging Face saves them, or nanotron's file per tensor "
      "shard); Megatron-LM's metadata.json. Pickled files (.pt, .bin, torch_dist .metadata) are "
      "never opened. Names follow the model's Hugging Face class; GPT-OSS's MXFP4 experts "
      "(_blocks, _scales) are checked as its experts")(
      "platform", text("P"), "for memory and load time (default h100-sxm-ndr, as run's)")(
      "format", text("text|json"),
      "what to print (default text; json lists every tensor and rank)");
  return d;
}

}  // namespace

std::string reshard_help() {
  std::ostringstream o;
  o << "usage: trainsim reshard --model M --from LAYOUT --to LAYOUT [--framework F]\n"
       "                        [--vocab-divisible-by N] [--checkpoint DIR] [--platform P]\n"
       "                        [--format text|json]\n\n"
       "Checks, before the job is launched, that a checkpoint saved under one parallel layout\n"
       "resumes under another, and prices the conversion. For every tensor of the model it\n"
       "gives the shard each TP rank holds under both layouts (the TP split dimension of its\n"
       "layer kind, the vocabulary padded by the framework's rule), the pipeline stage that\n"
       "holds it (the framework's partition rule) and, with a distributed optimizer, its\n"
       "offsets in the flat buffer each DP rank owns a share of; the optimizer state (fp32\n"
       "master weight, Adam's two moments) is sharded as the weight, Adam's step is not.\n\n"
       "Then it reports, as diagnostics with the severities and exit codes of `check`:\n"
       "  vocab-padding-mismatch  the vocabulary padded to different sizes under the two\n"
       "                          layouts (error where the framework's loader cannot merge the\n"
       "                          shards, as nanotron #106), with the padding both can share\n"
       "  padding-rows            padding rows added (initialised, trained) or dropped\n"
       "  optimizer-not-reshardable  an optimizer checkpoint format that cannot change TP/PP/EP\n"
       "  stage-change            layers whose pipeline stage changes, and how many bytes\n"
       "  layers-dropped, oom     layers a layout does not build; a new layout whose model\n"
       "                          state alone exceeds the GPU's memory\n"
       "  saved-shard-not-tensor  (--checkpoint) a saved tensor that is one TP shard of the\n"
       "                          padded tensor, not the tensor (ColossalAI #6108), and other\n"
       "                          saved shapes that differ from the layout's prediction\n"
       "  saved-experts-of-one-rank  (--checkpoint) a tensor of every expert of a layer\n"
       "                          (GPT-OSS, Llama 4) saved with one EP rank's experts only\n"
       "and the conversion plan: for every new rank the old files it reads and the bytes,\n"
       "what it writes when saving at the new layout, and the time to load on the platform's\n"
       "storage (its storage.read_bandwidth_GBps per node) against resuming at the same layout.\n"
       "Exits 1 when any diagnostic is an error, 2 on bad input, 0 otherwise.\n\n"
    << reshard_flags()
    << "\nexamples:\n"
       "  trainsim reshard --model llama3.1-8b --from tp=2,pp=1,dp=4 --to tp=4,pp=1,dp=2\n"
       "  trainsim reshard --model scenarios/seeds/models/nanotron-108-tiny.json \\\n"
       "                   --framework nanotron --from tp=2,pp=1,dp=1 --to tp=1,pp=1,dp=2\n"
       "  trainsim reshard --model mixtral-8x7b --from tp=1,pp=4,dp=8,ep=8,zero=1 \\\n"
       "                   --to tp=1,pp=4,dp=8,ep=4,zero=1\n"
       "  trainsim reshard --model llama3.1-70b --framework colossalai --from tp=8,pp=1,dp=1 \\\n"
       "                   --to tp=8,pp=1,dp=1 --checkpoint path/to/checkpoint\n";
  return o.str();
}

ReshardOptions parse_reshard_options(const std::vector<std::string>& args) {
  const po::variables_map vm = parse_command_line("reshard", args, reshard_flags(), "extra");
  ReshardOptions opt;
  opt.help = vm.count("help") > 0;
  if (vm.count("extra")) {
    fail_input("trainsim reshard", "takes no positional arguments, got '" +
                                       strings_of(vm, "extra")[0] +
                                       "' (see trainsim reshard --help)");
  }
  opt.model = string_of(vm, "model");
  opt.from = string_of(vm, "from");
  opt.to = string_of(vm, "to");
  opt.framework = string_of(vm, "framework");
  opt.vocab_divisible_by = string_of(vm, "vocab-divisible-by");
  opt.checkpoint = path_of(vm, "checkpoint");
  if (auto p = string_of(vm, "platform")) opt.platform = *p;
  opt.format = format_of(vm, opt.format);
  return opt;
}

}  // namespace trainsim
