#include "sim/cli/args.hpp"

#include <boost/program_options.hpp>
#include <filesystem>
#include <sstream>

#include "sim/cli/budget_flags.hpp"
#include "sim/cli/command_line.hpp"
#include "sim/cli/plan_flags.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"

namespace po = boost::program_options;

namespace trainsim {

namespace {

po::options_description io_options(const std::string& command) {
  po::options_description d("Inputs and output", kHelpWidth, kHelpDescriptionWidth);
  const std::string platform_help = std::string("platform: a name under platforms/ or a path ") +
                                    "(default " + kDefaultPlatform +
                                    " where no scenario names one; trainsim list shows them)";
  d.add_options()("help,h", "show this help")(
      "model", po::value<std::string>()->value_name("M"),
      "model: a name under models/ (e.g. llama3.1-70b) or a path to our JSON or a Hugging Face "
      "config.json (or its folder)")("platform", po::value<std::string>()->value_name("P"),
                                     platform_help.c_str())(
      "kernel-db", po::value<std::string>()->value_name("FILE|none"),
      "kernel timings from this database instead of the platform's (e.g. the published "
      "figures: kernels-published.json in platforms/h100-sxm/), or none: the roofline alone")(
      "format", po::value<std::string>()->value_name("text|json"), "what to print (default text)")(
      "megatron-args", po::value<std::string>()->value_name("ARGS|@FILE"),
      "the plan from Megatron-LM's launch arguments, as pretrain_gpt.py takes them, quoted as one "
      "word (\"--tensor-model-parallel-size 8 --sequence-parallel --bf16 ...\"), or from a file "
      "that holds them "
      "(a launch script, read as bash would run it without running anything: its variables, "
      "arrays and if-tests expanded and decided, its last command running a .py the launch, "
      "torchrun's options before the .py left out): parallel "
      "sizes, batch, schedule, recomputation, precision, optimizer, overlaps and MoE options, "
      "with Megatron-LM's defaults where they say nothing and trainsim's differ (dropout 0.1; "
      "for an MoE model the allgather dispatcher and sequential experts); the model's shape "
      "arguments checked against --model, or without --model the model Megatron-LM builds "
      "from them (--num-layers, --hidden-size, ..., the vocabulary of --tokenizer-type "
      "NullTokenizer --vocab-size N or GPT2BPETokenizer; --save-scenario then writes it beside "
      "the scenario as NAME.model.json); the other plan flags override them; arguments that "
      "set nothing trainsim prices (learning rate, data, logging) listed on the standard "
      "error. Needs --gpus N where no torchrun --nproc-per-node (x --nnodes) gives the "
      "world size whose data parallelism Megatron-LM takes")(
      "nanotron-config", po::value<std::string>()->value_name("FILE.yaml"),
      "the plan from a nanotron training config (the YAML run_train.py takes): dp, tp, pp and "
      "cp, the pipeline engine, tp_mode (REDUCE_SCATTER: sequence parallelism), "
      "recompute_layer, sequence length, micro-batch and accumulation (gbs = mbs x accumulation "
      "x dp), ZeRO stage, dtype and the vocabulary multiple, with nanotron's partition rule; "
      "without --model, the model of its model_config (Llama or Qwen2, with its moe_config's "
      "experts; --save-scenario then writes it beside the scenario); the other plan flags "
      "override it")(
      "torchtitan-config", po::value<std::string>()->value_name("FILE.toml"),
      "the plan from a torchtitan training config (the TOML train.py takes): data parallelism "
      "(replicate x shard; shard -1 is what --gpus leaves), FSDP as ZeRO (3, or 1 under "
      "pipelining, where torchtitan gathers the weights once a step), tp with sequence "
      "parallelism, pp with its schedule and torchtitan's split of the layers, cp and its "
      "rotate method, HSDP's replicas, ep and etp on MoE models, the local, micro and global "
      "batch, seq_len, activation checkpointing (full, every N-th layer, per operator), the "
      "float8 converter; without --model, the catalog model of [model] name and flavor (llama3 "
      "8B, 70B, 405B; llama2 7B, 70B; llama4 17bx128e; deepseek_v3 16B, 236B, 671B; qwen3 30B-A3B, "
      "235B-A22B). What trainsim cannot price as torchtitan runs it (every N-th layer "
      "checkpointed unevenly over the stages, rowwise FP8, FP8 on experts, zero-bubble "
      "schedules) is refused naming the key, unless the plan flag for it is given; the other "
      "plan flags override the config")(
      "save-scenario", po::value<std::string>()->value_name("FILE"),
      "also write the inputs as resolved (the model, the platform, the plan with the scenario's "
      "values, the flags and --megatron-args applied, the run's budget) as a scenario file that "
      "runs the same plan: a column for trainsim compare, a start for a sweep file");
  if (command == "run") {
    d.add_options()("out", po::value<std::string>()->value_name("DIR"),
                    "also write DIR/report.json and DIR/report.txt")(
        "engine", po::value<std::string>()->value_name("simgrid|analytic"),
        "simgrid (default): flow-level network with contention; analytic: critical path "
        "without contention")("strict", po::bool_switch(),
                              "exit 1 when the report has error-level diagnostics")(
        "full-simulation", po::bool_switch(),
        "replay every GPU's program; by default, where the layout is symmetric, one GPU per "
        "pipeline stage replays it for the stage's GPUs (same result, much faster)")(
        "dump-graph", po::value<std::string>()->value_name("FILE"),
        "write the task graph (per-rank operations) as JSON")(
        "trace", po::value<std::string>()->value_name("FILE"),
        "write the replay as a Chrome trace (open in ui.perfetto.dev or chrome://tracing): one "
        "GPU per pipeline stage, its passes and transfers, and its memory over the step")(
        "svg", po::value<std::string>()->value_name("FILE"),
        "draw the pipeline diagram of the replay as SVG: a row per stage, forward, backward and "
        "other passes as boxes numbered by micro-batch, the bubbles blank, communication under "
        "each row, a time axis in ms")(
        "html", po::value<std::string>()->value_name("FILE"),
        "write the report as one self-contained HTML page (no network needed): summary with "
        "its band, where the step goes, the pipeline diagram, the stages, memory over the step "
        "and what holds its peak, the diagnostics and their fixes")(
        "measured-log", po::value<std::string>()->value_name("FILE"),
        "a training log of this very run (Megatron-LM's, nanotron's or torchtitan's): the "
        "median of its logged iteration times, or torchtitan's tokens/s per GPU (the first "
        "interval left out as warm-up where three or more were logged) and the largest "
        "allocated peak of its memory reports, printed beside the prediction with "
        "trainsim's error; with --save-scenario, written as the scenario's \"published\" "
        "figures, for trainsim validate");
    d.add(budget_options("The run's length, price and failures"));
  }
  return d;
}

std::string field_of(const std::string& flag) {
  std::string f;
  for (char c : flag) f += c == '-' ? '_' : c;
  return f;
}

}  // namespace

std::string top_help() {
  return "trainsim: simulate distributed training schedules on modelled GPU clusters\n"
         "\n"
         "usage:\n"
         "  trainsim run   SCENARIO.json | --model M --platform P [plan flags] [--out DIR]\n"
         "                 [--format text|json]\n"
         "  trainsim check same inputs: diagnostics only (exit 1 on errors)\n"
         "  trainsim compare SCENARIO [SCENARIO ...] [--set KEY=VALUE,...]... [--html FILE]\n"
         "                 plans side by side: step, throughput, bubble, memory, diagrams\n"
         "  trainsim validate [REFERENCE.json ...] [SCENARIO ...]\n"
         "                 predictions against published measurements, or a cluster's own "
         "runs\n"
         "  trainsim reshard --model M --from tp=2,pp=1,dp=4 --to tp=1,pp=1,dp=8 [--checkpoint "
         "DIR]\n"
         "                 resume a checkpoint under a new layout: shards, checks, conversion "
         "plan\n"
         "  trainsim sweep SWEEP.json --out FILE.csv [--jobs N] [--shard K/N]\n"
         "                 every plan of a sweep file priced: CSV, fastest plans, Pareto front\n"
         "  trainsim list  the catalog: models (with parameter counts), platforms, scenarios\n"
         "\n"
         "A scenario names a model, a platform and a plan; flags override its values. Models,\n"
         "platforms and scenarios are looked up by name in the catalog (models/, platforms/,\n"
         "scenarios/; set TRAINSIM_DATA_DIR to use another) or given as paths.\n"
         "\n"
         "examples:\n"
         "  trainsim run scenarios/nemotron4-340b.json    (a published recipe, with its "
         "measured step\n"
         "                                                time beside the prediction)\n"
         "  trainsim run --model llama3.1-8b --platform h100-sxm-ndr --tp 2 --pp 2 --dp 2 \\\n"
         "               --gbs 64 --seq-len 8192\n"
         "  trainsim run scenarios/llama3.1-70b-64gpu.json --schedule gpipe --format json\n"
         "  trainsim check --model llama3.1-70b \\\n"
         "                 --megatron-args @scenarios/launch/llama3.1-70b-64gpu.sh\n"
         "  trainsim check --nanotron-config scenarios/launch/nanotron-108.yaml\n"
         "                                                (nanotron issue #108 from its config)\n"
         "  trainsim run --torchtitan-config scenarios/launch/torchtitan-llama3-70b.toml\n"
         "\n"
         "exit codes: 0 success; 1 error-level diagnostics (check, run --strict); 2 bad input.\n"
         "`trainsim run --help` lists every flag.\n";
}

std::string run_help(const std::string& command) {
  std::ostringstream o;
  if (command == "run") {
    o << "usage: trainsim run [SCENARIO.json] [flags]\n\n"
         "Builds every GPU's operations (compute, tensor-parallel all-reduces, pipeline sends and\n"
         "receives, the data-parallel gradient all-reduce, the optimizer step) and replays them "
         "on\n"
         "the platform's network. Prints step time, tokens/s, model TFLOP/s per GPU, MFU, the\n"
         "pipeline bubble, exposed communication by kind, a per-stage table, and each stage's\n"
         "memory per GPU at its peak (weights, gradients, optimizer state, activations with the\n"
         "micro-batches in flight, runtime); an oom error when a stage does not fit.\n\n";
  } else {
    o << "usage: trainsim check [SCENARIO.json] [flags]\n\n"
         "Builds the plan's partition with the named framework rule and reports what would go\n"
         "wrong, each finding with a fix that names an alternative plan and its simulated step\n"
         "time. Errors: stage-without-parameters, empty-stage, layers-dropped (the framework\n"
         "crashes or trains a different model), gbs-not-divisible, oom (a stage's peak memory\n"
         "exceeds the GPU's, with plans that fit). Warnings: stage-imbalance,\n"
         "microbatches-fewer-than-stages, uneven-tp-shard (vocabulary padding and its checkpoint\n"
         "hazard), tp-across-nodes; for context and expert parallelism cp-ring-exposed,\n"
         "cp-a2a-across-nodes, expert-imbalance, ep-across-nodes, expert-tp-split,\n"
         "ep-a2a-exposed; for interleaved pipelines pp-exchanges-exposed; what the model\n"
         "holds beyond the simulation: sequence-past-trained-positions, unmodelled-config-key,\n"
         "tp-comm-overlap-dropped; zero-unsharded (ZeRO over a data-parallel group of one GPU);\n"
         "and faster-plan-nearby (a plan one step away on the same GPUs runs the step 1.25\n"
         "times faster). Exits 1 when any is an error, 0 otherwise.\n\n"
         "  trainsim check scenarios/seeds/nanotron-108.json\n"
         "  trainsim check --model llama3.1-70b --platform h100-sxm-ndr --tp 8 --pp 4 --dp 2 \\\n"
         "                 --seq-len 8192 --gbs 64 --framework colossalai\n\n";
  }
  o << io_options(command) << "\n" << plan_options();
  return o.str();
}

namespace {

// validate's flags: what parses them and what --help lists.
po::options_description validate_flags() {
  po::options_description d("Flags", kHelpWidth, kHelpDescriptionWidth);
  d.add_options()("help,h", "show this help")(
      "platform", po::value<std::string>()->value_name("P"),
      "platform to predict on (default: the one each reference set was measured on: "
      "a100-sxm-hdr for the A100 tables, h100-sxm-ndr otherwise; each scenario's own)")(
      "format", po::value<std::string>()->value_name("text|json"),
      "text (Markdown, the default) or json")("out", po::value<std::string>()->value_name("FILE"),
                                              "also write the output to FILE")(
      "jobs", po::value<std::string>()->value_name("N"),
      "scenarios replayed at once, each in a process of its own (default 1)");
  return d;
}

}  // namespace

std::string validate_help() {
  std::ostringstream o;
  o << "usage: trainsim validate [REFERENCE.json ...] [SCENARIO ...] [--platform P]\n"
       "                         [--format text|json] [--out FILE] [--jobs N]\n\n"
       "Compares trainsim's predictions with published measurements, row by row, and lists\n"
       "the rows it cannot express with the reason. Without REFERENCE.json: the Megatron-LM CI\n"
       "golden values in tests/validation/refdata/ (peak allocated memory per GPU on DGX\n"
       "H100, with the allocated memory after the step beside it, which holds no activations;\n"
       "then iteration time, reported apart: CI runs small models in deterministic mode).\n"
       "tests/validation/refdata/nvidia_dgxc_benchmarking_h100.json: step time of\n"
       "NVIDIA's DGX Cloud recipes, each row in the fitting or checking half of a fixed split.\n"
       "tests/validation/refdata/narayanan2021_megatron_a100_table1_table2.json: step time of\n"
       "Megatron-LM's SC21 weak-scaling runs on DGX A100 (1.7B to 1T parameters).\n"
       "tests/validation/refdata/megatron_lm_readme_h100_weak_scaling.json: step time of the\n"
       "weak-scaling table in Megatron-LM's README (H100), the settings it leaves out chosen\n"
       "as the fastest that fits, reported apart.\n"
       "SCENARIO: one's own measured runs: a scenario file (or a folder of them, or a\n"
       "catalog scenario's name) whose \"published\" array holds the step times measured on\n"
       "it, each predicted as trainsim run predicts it, one set per platform. On a folder, a\n"
       "scenario without \"published\" is a skipped row. Check trainsim against a cluster's\n"
       "own runs before trusting it there:\n"
       "  trainsim validate my-runs/\n"
       "Prints Markdown (or JSON) with each row's error and the mean and max error; under\n"
       "step time, also each run's predicted peak memory against its GPU (the runs ran).\n\n"
    << validate_flags();
  return o.str();
}

ValidateOptions parse_validate_options(const std::vector<std::string>& args) {
  const po::variables_map vm = parse_command_line("validate", args, validate_flags(), "reference");
  ValidateOptions opt;
  opt.help = vm.count("help") > 0;
  opt.references = strings_of(vm, "reference");
  opt.platform = string_of(vm, "platform");
  opt.format = format_of(vm, opt.format);
  opt.out = path_of(vm, "out");
  opt.jobs = positive_of(vm, "jobs").value_or(1);
  return opt;
}

RunOptions parse_run_options(const std::string& command, const std::vector<std::string>& args) {
  po::options_description all;
  all.add(io_options(command)).add(plan_options());
  const po::variables_map vm = parse_command_line(command, args, all, "scenario");
  RunOptions opt;
  opt.help = vm.count("help") > 0;
  if (vm.count("scenario")) {
    const auto& list = vm["scenario"].as<std::vector<std::string>>();
    if (list.size() > 1)
      fail_input("trainsim " + command,
                 "takes one SCENARIO.json, got " + std::to_string(list.size()) + " arguments");
    opt.inputs.scenario = list[0];
  }
  if (vm.count("model")) opt.inputs.model = vm["model"].as<std::string>();
  if (vm.count("platform")) opt.inputs.platform = vm["platform"].as<std::string>();
  if (vm.count("kernel-db")) opt.inputs.kernel_db = vm["kernel-db"].as<std::string>();
  if (vm.count("megatron-args")) {
    const std::string text = vm["megatron-args"].as<std::string>();
    if (text.starts_with("@")) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(text.substr(1), ec)) {
        fail_input("--megatron-args", "no such file: " + text.substr(1));
      }
      opt.inputs.megatron_args = read_text_file(text.substr(1));
      opt.inputs.megatron_args_file = text.substr(1);
    } else {
      opt.inputs.megatron_args = text;
    }
  }
  for (const auto& [flag, config] :
       {std::pair{"nanotron-config", &opt.inputs.nanotron_config},
        std::pair{"torchtitan-config", &opt.inputs.torchtitan_config}}) {
    const auto path = path_of(vm, flag);
    if (!path) continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*path, ec)) {
      fail_input(std::string("--") + flag, "no such file: " + *path);
    }
    if (opt.inputs.megatron_args || opt.inputs.nanotron_config) {
      fail_input(std::string("--") + flag,
                 std::string("is given with ") +
                     (opt.inputs.megatron_args ? "--megatron-args" : "--nanotron-config") +
                     ": give one launch config");
    }
    *config = *path;
  }
  opt.format = format_of(vm, opt.format);
  opt.out_dir = path_of(vm, "out");
  if (vm.count("engine")) {
    auto e = vm["engine"].as<std::string>();
    if (e != "simgrid" && e != "analytic") {
      fail_input("--engine", "must be simgrid or analytic, got '" + e + "'");
    }
    opt.inputs.engine = e;
  }
  if (vm.count("strict")) opt.strict = vm["strict"].as<bool>();
  if (vm.count("full-simulation")) opt.full_simulation = vm["full-simulation"].as<bool>();
  opt.dump_graph = path_of(vm, "dump-graph");
  opt.trace = path_of(vm, "trace");
  opt.svg = path_of(vm, "svg");
  opt.html = path_of(vm, "html");
  opt.save_scenario = path_of(vm, "save-scenario");
  if (const auto log = path_of(vm, "measured-log")) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*log, ec))
      fail_input("--measured-log", "no such file: " + *log);
    opt.inputs.measured_log = *log;
  }
  opt.inputs.budget = budget_of(vm);
  const auto plan = plan_options();
  for (const auto& o : plan.options()) {
    const auto& name = o->long_name();
    if (o->semantic()->max_tokens() == 0) {  // a switch: po::bool_switch()
      if (!vm[name].as<bool>()) continue;
      // --no-X sets field X to false.
      if (name.starts_with("no-")) {
        opt.inputs.plan_flags[field_of(name.substr(3))] = "false";
      } else {
        opt.inputs.plan_flags[field_of(name)] = "true";
      }
      continue;
    }
    if (!vm.count(name)) continue;
    opt.inputs.plan_flags[field_of(name)] = vm[name].as<std::string>();
  }
  return opt;
}

}  // namespace trainsim
