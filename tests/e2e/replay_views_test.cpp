// What a replay can be looked at as: the task graph, the Chrome trace, the pipeline diagram, the
// one-page HTML report, and plans side by side (trainsim compare); the binary in a child process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kScenario = test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";

TEST(Cli, DumpGraphWritesTheTaskGraph) {
  const std::string path = test::make_temp_dir() + "/graph.json";
  const auto r = test::run_trainsim({"run", kScenario, "--dump-graph", path, "--full-simulation"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto g = nlohmann::json::parse(test::read_file(path));
  EXPECT_EQ(g["ranks"].size(), 64u);
}

// Under FP8 each stage's first forward of the step also quantises the stage's GEMM weights
// (80 decoder layers over 4 stages: 20 layers x 4 linears): its slice lists 80 launches more
// than every other forward of the stage, which list the same.
TEST(Cli, TheTracesFirstForwardQuantisesTheWeights) {
  const std::string path = test::make_temp_dir() + "/trace.json";
  const auto r = test::run_trainsim(
      {"run", kScenario, "--engine", "analytic", "--precision", "fp8", "--trace", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(test::read_file(path));
  std::map<std::int64_t, std::vector<std::pair<double, std::int64_t>>> forwards;  // by stage
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "forward") continue;
    std::int64_t launches = 0;
    for (const auto& [source, n] : e["args"]["kernel launches by time source"].items()) {
      launches += n.get<std::int64_t>();
    }
    forwards[e["pid"].get<std::int64_t>()].push_back({e["ts"].get<double>(), launches});
  }
  ASSERT_EQ(forwards.size(), 4u);
  for (auto& [stage, f] : forwards) {
    std::sort(f.begin(), f.end());
    ASSERT_EQ(f.size(), 32u) << stage;
    for (std::size_t i = 1; i < f.size(); ++i) {
      EXPECT_EQ(f[0].second - f[i].second, 80) << stage << " " << i;
    }
  }
}

// The Chrome trace of a replay: one GPU per stage, its passes and transfers, and a memory counter
// whose maximum is the stage's peak_memory_bytes in the report and which ends at its least (every
// activation freed). Checked on 1F1B and on an interleaved plan with recomputation, the
// distributed optimizer and overlapped parameter gathers (forward passes split into pieces).
void expect_trace_matches_report(const std::vector<std::string>& flags, std::int64_t passes) {
  const std::string path = test::make_temp_dir() + "/trace.json";
  std::vector<std::string> args = {"run", kScenario, "--format", "json", "--trace", path};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = test::run_trainsim(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto trace = nlohmann::json::parse(test::read_file(path));
  const auto& events = trace["traceEvents"];
  const auto stages = report["stages"].size();
  for (std::size_t s = 0; s < stages; ++s) {
    double peak = 0, least = -1, last = -1, previous_ts = -1;
    std::int64_t forwards = 0, backwards = 0;
    std::set<std::string> seen;
    for (const auto& e : events) {
      if (e["pid"] != s) continue;
      if (e["ph"] == "C") {
        const double gib = e["args"]["GiB"];
        peak = std::max(peak, gib);
        if (least < 0 || gib < least) least = gib;
        last = gib;
        EXPECT_GT(e["ts"].get<double>(), previous_ts);  // one sample per instant
        previous_ts = e["ts"];
      } else if (e["ph"] == "X") {
        EXPECT_GE(e["dur"].get<double>(), 0.0);
        // A pass split into pieces (parameter gathers) counts once.
        if (e["cat"] != "forward" && e["cat"] != "backward") continue;
        const std::string pass = e["cat"].get<std::string>() + " " +
                                 e["args"]["micro-batch"].dump() + " " + e["args"]["chunk"].dump();
        if (e["cat"] == "forward" && seen.insert(pass).second) ++forwards;
        if (e["cat"] == "backward" && seen.insert(pass).second) ++backwards;
      }
    }
    const double want = report["stages"][s]["peak_memory_bytes"].get<double>() / (1 << 30);
    EXPECT_NEAR(peak, want, 1e-9 * want) << "stage " << s;
    EXPECT_NEAR(last, least, 1e-9 * least) << "stage " << s;  // back to model state alone
    EXPECT_EQ(forwards, passes) << "stage " << s;
    EXPECT_EQ(backwards, passes) << "stage " << s;
  }
}

TEST(Cli, TraceFollowsTheReplayAndTheMemoryModel) {
  expect_trace_matches_report({}, 32);  // 1F1B: 32 micro-batches
  // Interleaved, vp 2: 32 micro-batches x 2 chunks per stage.
  expect_trace_matches_report(
      {"--engine", "analytic", "--schedule", "interleaved", "--vp", "2", "--recompute", "full",
       "--sp", "--zero", "1", "--overlap-grad-reduce", "--overlap-param-gather"},
      64);
  // The same inputs give the same trace, byte for byte.
  const std::string dir = test::make_temp_dir();
  for (const char* name : {"/a.json", "/b.json"}) {
    ASSERT_EQ(test::run_trainsim({"run", kScenario, "--engine", "analytic", "--schedule", "zb-h1",
                                  "--trace", dir + name})
                  .exit_code,
              0);
  }
  EXPECT_EQ(test::read_file(dir + "/a.json"), test::read_file(dir + "/b.json"));
}

// Each op once, with its details: no two slices alike on a track, every slice's `args` naming
// what it is, an arrow from every pipeline send to its receive on the next or previous stage,
// no empty track, and one memory sample per instant.
TEST(Cli, TraceSlicesAreDistinctAndCarryTheirDetails) {
  const std::string path = test::make_temp_dir() + "/trace.json";
  const auto r = test::run_trainsim({"run", kScenario, "--engine", "analytic", "--trace", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(test::read_file(path));
  std::set<std::tuple<std::int64_t, std::int64_t, double, std::string>> slices;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> slices_on_track;
  std::set<std::pair<std::int64_t, std::int64_t>> named_tracks;
  std::map<std::int64_t, double> last_counter;
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> flows;  // id -> (from, to) pid
  std::int64_t sends = 0, forwards = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    const std::int64_t pid = e["pid"];
    if (ph == "X") {
      const std::int64_t tid = e["tid"];
      ++slices_on_track[{pid, tid}];
      // One slice per op: no twin with its name, track and start.
      EXPECT_TRUE(slices.insert({pid, tid, e["ts"].get<double>(), e["name"]}).second) << e.dump();
      ASSERT_TRUE(e.contains("args")) << e.dump();
      if (e["cat"] == "forward") {
        ++forwards;
        EXPECT_GT(e["args"]["GFLOP"].get<double>(), 0.0);
        EXPECT_TRUE(e["args"].contains("kernel launches by time source"));
        EXPECT_NE(e["name"].get<std::string>().find("decoder"), std::string::npos) << e.dump();
      }
      if (e["cat"] == "pp") {
        const std::int64_t peer = e["args"]["peer stage"];
        EXPECT_EQ(std::abs(peer - pid), 1) << e.dump();
        EXPECT_GT(e["args"]["MB"].get<double>(), 0.0);
        if (e["args"]["direction"] == "send") ++sends;
      }
    } else if (ph == "M" && e["name"] == "thread_name") {
      named_tracks.insert({pid, e["tid"].get<std::int64_t>()});
    } else if (ph == "C") {
      if (last_counter.count(pid)) {
        EXPECT_GT(e["ts"].get<double>(), last_counter[pid]);
      }
      last_counter[pid] = e["ts"];
    } else if (ph == "s") {
      flows[e["id"]].first = pid;
    } else if (ph == "f") {
      flows[e["id"]].second = pid;
    }
  }
  // Llama 3.1 70B at pp 4: 32 micro-batches, forwards on each of 4 stages.
  EXPECT_EQ(forwards, 4 * 32);
  for (const auto& track : named_tracks) EXPECT_GT(slices_on_track[track], 0);
  for (const auto& [track, count] : slices_on_track) EXPECT_TRUE(named_tracks.count(track));
  // Every send between the traced GPUs has its arrow: activations down and gradients up, one per
  // micro-batch and stage boundary each way.
  EXPECT_EQ(sends, 2 * 3 * 32);
  EXPECT_EQ(static_cast<std::int64_t>(flows.size()), sends);
  for (const auto& [id, ends] : flows) EXPECT_EQ(std::abs(ends.first - ends.second), 1);
}

// The start tags of `text` that begin with `prefix`, each up to its closing '>'.
std::vector<std::string> elements(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (auto at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    out.push_back(text.substr(at, text.find('>', at) - at + 1));
  }
  return out;
}

// The value of attribute `name` in the first tag of `element` that has it ("" when none).
std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = element.find(key);
  if (at == std::string::npos) return "";
  const auto start = at + key.size();
  return element.substr(start, element.find('"', start) - start);
}

// The pipeline diagram drawn from the replay: per stage, one box per forward and per backward
// pass, at the trace's times on the diagram's own scale (a pass run in pieces from its first
// piece's start to its last one's end). 1F1B, then interleaved with overlapped parameter gathers.
void expect_svg_matches_trace(const std::vector<std::string>& flags, std::int64_t passes) {
  const std::string dir = test::make_temp_dir();
  std::vector<std::string> args = {"run",   kScenario,         "--engine", "analytic",
                                   "--svg", dir + "/pipe.svg", "--trace",  dir + "/trace.json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = test::run_trainsim(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = test::read_file(dir + "/pipe.svg");
  const auto trace = nlohmann::json::parse(test::read_file(dir + "/trace.json"));
  const double ms_per_px = std::stod(attribute(svg, "data-ms-per-px"));
  const double origin = std::stod(attribute(svg, "data-origin-x"));
  // The trace's passes: (stage, pass, micro-batch, chunk) -> first start and last end, in ms.
  std::map<std::tuple<std::int64_t, std::string, std::int64_t, std::int64_t>,
           std::pair<double, double>>
      want;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || (e["cat"] != "forward" && e["cat"] != "backward")) continue;
    const auto key = std::make_tuple(e["pid"].get<std::int64_t>(), e["cat"].get<std::string>(),
                                     e["args"]["micro-batch"].get<std::int64_t>(),
                                     e["args"]["chunk"].get<std::int64_t>());
    const double start = e["ts"].get<double>() / 1e3, end = start + e["dur"].get<double>() / 1e3;
    auto [it, fresh] = want.try_emplace(key, start, end);
    if (!fresh) it->second = {std::min(it->second.first, start), std::max(it->second.second, end)};
  }
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> boxes;
  for (const std::string& b : elements(svg, "<rect class=\"pass ")) {
    const std::string kind = attribute(b, "class");
    if (kind != "pass F" && kind != "pass B") continue;
    const std::string pass = kind == "pass F" ? "forward" : "backward";
    const auto key = std::make_tuple(std::stoll(attribute(b, "data-stage")), pass,
                                     std::stoll(attribute(b, "data-mb")),
                                     std::stoll(attribute(b, "data-chunk")));
    ASSERT_TRUE(want.count(key)) << b;
    const auto [start, end] = want[key];
    EXPECT_NEAR(std::stod(attribute(b, "x")), origin + start / ms_per_px, 0.01) << b;
    EXPECT_NEAR(std::stod(attribute(b, "width")), (end - start) / ms_per_px, 0.01) << b;
    ++boxes[{std::get<0>(key), pass}];
  }
  EXPECT_EQ(svg.find("merged"), std::string::npos);
  for (std::int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ((boxes[{s, "forward"}]), passes) << "stage " << s;
    EXPECT_EQ((boxes[{s, "backward"}]), passes) << "stage " << s;
  }
}

TEST(Cli, PipelineDiagramMatchesTheReplay) {
  expect_svg_matches_trace({}, 32);
  expect_svg_matches_trace({"--schedule", "interleaved", "--vp", "2", "--sp", "--zero", "1",
                            "--overlap-grad-reduce", "--overlap-param-gather"},
                           64);
}

// The trace and the diagram name a pass alike (pass_label): under ZB-H1 each input-gradient and
// weight-gradient box of the diagram is a slice of the trace with that name, micro-batch and
// stage.
TEST(Cli, TraceAndDiagramNameThePassesAlike) {
  const std::string dir = test::make_temp_dir();
  const auto r =
      test::run_trainsim({"run", kScenario, "--engine", "analytic", "--schedule", "zb-h1", "--svg",
                          dir + "/pipe.svg", "--trace", dir + "/trace.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(test::read_file(dir + "/trace.json"));
  const std::map<std::string, std::string> label = {
      {"forward", "F"}, {"backward_input", "B-input"}, {"backward_weight", "W"}};
  std::set<std::tuple<std::int64_t, std::string, std::int64_t>> slices;  // stage, name, mb
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || !label.count(e["cat"]) || !e["args"].contains("micro-batch")) continue;
    const std::string name = e["name"];
    const std::int64_t mb = e["args"]["micro-batch"];
    if (mb < 0) continue;  // the deferred LM-head weight gradient, named for what it is
    const std::string& want = label.at(e["cat"]);
    EXPECT_EQ(name.rfind(want + " mb " + std::to_string(mb), 0), 0u) << name;
    slices.insert({e["pid"].get<std::int64_t>(), want, mb});
  }
  std::map<std::string, std::int64_t> boxes;
  for (const std::string& b : elements(test::read_file(dir + "/pipe.svg"), "<rect class=\"pass ")) {
    const std::string kind = attribute(b, "class").substr(5);
    if (kind != "F" && kind != "B-input" && kind != "W") continue;
    EXPECT_TRUE(slices.count(
        {std::stoll(attribute(b, "data-stage")), kind, std::stoll(attribute(b, "data-mb"))}))
        << b;
    ++boxes[kind];
  }
  for (const char* kind : {"F", "B-input", "W"}) EXPECT_GT(boxes[kind], 0) << kind;
}

// The report as one page that opens with no network: nothing fetched (no script, stylesheet,
// image source, import or url()), the only URL the SVG namespace; the summary, the pipeline
// diagram, a row and a memory curve per stage, and the diagnostics.
TEST(Cli, HtmlReportIsSelfContained) {
  const std::string path = test::make_temp_dir() + "/report.html";
  const auto r = test::run_trainsim(
      {"run", kScenario, "--engine", "analytic", "--format", "json", "--html", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const std::string html = test::read_file(path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* external : {"<script", "<link", "src=", "@import", "url(", "https://"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  std::string rest = html;
  for (auto at = rest.find("http://"); at != std::string::npos; at = rest.find("http://", at + 1)) {
    EXPECT_EQ(rest.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << rest.substr(at, 40);
  }
  char step[32];
  std::snprintf(step, sizeof step, "%.3f s (P10-P90", report["step_time_s"].get<double>());
  EXPECT_NE(html.find(step), std::string::npos) << step;
  EXPECT_NE(html.find("<rect class=\"pass F\""), std::string::npos);  // the pipeline diagram
  const auto stages = report["stages"].size();
  std::size_t curves = 0;
  for (auto at = html.find("<polyline"); at != std::string::npos;
       at = html.find("<polyline", at + 1)) {
    ++curves;
  }
  EXPECT_EQ(curves, stages);
  for (std::size_t s = 0; s < stages; ++s) {
    EXPECT_NE(html.find("stage " + std::to_string(s) + ": peak "), std::string::npos) << s;
  }
  EXPECT_NE(html.find("<h2>Diagnostics</h2>"), std::string::npos);
}

// Plans side by side: each column's step is the one `trainsim run` gives for the same inputs, the
// diagrams share one time axis, and bad --set values are exit 2 naming the flag.
TEST(Cli, CompareShowsPlansSideBySide) {
  const std::string dir = test::make_temp_dir();
  const auto r = test::run_trainsim({"compare", kScenario, "--set", "schedule=interleaved,vp=2",
                                     "--format", "json", "--html", dir + "/compare.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto columns = nlohmann::json::parse(r.out);
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[0]["label"], "llama3.1-70b-64gpu");  // the path without folders and .json
  EXPECT_EQ(columns[1]["label"], "schedule=interleaved,vp=2");
  // A catalog name is the column's whole name: its ".1-70b-64gpu" is no file extension.
  const auto by_name =
      test::run_trainsim({"compare", "llama3.1-70b-64gpu", "--set", "mbs=1", "--format", "json"});
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_EQ(nlohmann::json::parse(by_name.out)[0]["label"], "llama3.1-70b-64gpu");
  EXPECT_EQ(columns[1]["plan"]["vp"], 2);
  const std::vector<std::vector<std::string>> runs = {{},
                                                      {"--schedule", "interleaved", "--vp", "2"}};
  for (std::size_t c = 0; c < runs.size(); ++c) {
    std::vector<std::string> args = {"run", kScenario, "--engine", "analytic", "--format", "json"};
    args.insert(args.end(), runs[c].begin(), runs[c].end());
    const auto run = test::run_trainsim(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto report = nlohmann::json::parse(run.out);
    EXPECT_DOUBLE_EQ(columns[c]["step_time_s"].get<double>(), report["step_time_s"].get<double>());
    EXPECT_DOUBLE_EQ(columns[c]["tokens_per_s"].get<double>(),
                     report["tokens_per_s"].get<double>());
  }
  // One time axis: every diagram on the page has the same scale.
  const std::string html = test::read_file(dir + "/compare.html");
  std::set<std::string> scales;
  std::size_t diagrams = 0;
  for (const std::string& svg : elements(html, "<svg ")) {
    scales.insert(attribute(svg, "data-ms-per-px"));
    ++diagrams;
  }
  EXPECT_EQ(diagrams, 2u);
  EXPECT_EQ(scales.size(), 1u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // SimGrid runs one simulation per process: refused up front, not a crash at the second column.
  const auto simgrid = test::run_trainsim(
      {"compare", kScenario, "--set", "schedule=interleaved,vp=2", "--engine", "simgrid"});
  EXPECT_EQ(simgrid.exit_code, 2);
  EXPECT_EQ(simgrid.err.rfind("trainsim: error: --engine: compare replays its columns on the "
                              "analytic engine",
                              0),
            0u)
      << simgrid.err;
  // Bad input: exit 2, the flag named.
  const auto bad = test::run_trainsim({"compare", kScenario, "--set", "tpp=2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--set: 'tpp' is not a plan field"), std::string::npos) << bad.err;
  EXPECT_EQ(test::run_trainsim({"compare", kScenario}).exit_code, 2);
  // A key set twice, or nothing set, was a column of the last value or of the base plan.
  const auto twice = test::run_trainsim({"compare", kScenario, "--set", "tp=8,tp=4"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("--set: sets 'tp' twice in 'tp=8,tp=4'"), std::string::npos)
      << twice.err;
  EXPECT_EQ(test::run_trainsim({"compare", kScenario, "--set", ""}).exit_code, 2);
  const auto heads = test::run_trainsim({"compare", kScenario, "--set", "tp=3"});
  EXPECT_EQ(heads.err,
            "trainsim: error: --set tp=3: --tp: must divide the attention heads (64), got 3\n");
}

// The idle row is named for the columns it holds: a pipeline bubble only where every plan
// pipelines; at pp 1 a GPU idles only waiting on the others.
TEST(Cli, CompareNamesTheIdleRowForItsColumns) {
  const auto row = [](const std::string& text) { return text.substr(text.find("\nMFU") + 1); };
  const auto piped =
      test::run_trainsim({"compare", kScenario, "--set", "vp=2,schedule=interleaved"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(row(piped.out).find("\npipeline bubble  "), std::string::npos) << piped.out;
  const auto mixed = test::run_trainsim({"compare", kScenario, "--set", "pp=1,dp=16"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(row(mixed.out).find("\npipeline bubble / idle  "), std::string::npos) << mixed.out;
  const auto flat =
      test::run_trainsim({"compare", test::source_dir() + "/scenarios/llama3.1-8b-cp2-8gpu.json",
                          "--set", "cp=1,dp=8"});
  ASSERT_EQ(flat.exit_code, 0) << flat.err;
  EXPECT_NE(row(flat.out).find("\nidle  "), std::string::npos) << flat.out;
}

// A scenario without "gbs" runs mbs x dp sequences a step (Megatron-LM's default), so a column
// with another dp steps over another batch: the sequences/step row says so, and tokens/s is the
// batch's tokens over the step. The plan as given on a batch of 8 steps longer than on its 4.
TEST(Cli, CompareShowsTheBatchEachColumnSteps) {
  const std::string scenario = test::make_temp_dir() + "/no-batch.json";
  std::ofstream(scenario) << R"({"model": "llama3.1-8b", "platform": "h100-sxm-ndr",
      "plan": {"gpus": 16, "tp": 2, "pp": 2, "seq_len": 8192, "zero": 1}})";
  const std::vector<std::string> args = {"compare",   scenario, "--set",
                                         "tp=1,dp=8", "--set",  "gbs=8"};
  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\nsequences/step     4         8          8\n"), std::string::npos)
      << text.out;
  std::vector<std::string> json_args = args;
  json_args.insert(json_args.end(), {"--format", "json"});
  const auto j = test::run_trainsim(json_args);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto columns = nlohmann::json::parse(j.out);
  ASSERT_EQ(columns.size(), 3u);
  const std::vector<std::int64_t> sequences = {4, 8, 8};  // mbs 1 x dp 4, x dp 8, gbs 8
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(columns[i].at("sequences_per_step"), sequences[i]);
    EXPECT_NEAR(
        columns[i].at("tokens_per_s").get<double>(),
        static_cast<double>(sequences[i]) * 8192 / columns[i].at("step_time_s").get<double>(),
        1e-6 * columns[i].at("tokens_per_s").get<double>());
  }
  EXPECT_GT(columns[2].at("step_time_s").get<double>(), columns[0].at("step_time_s").get<double>());
}

// The fits row: Llama 3.1 8B on 8 GPUs needs 164 GiB unsharded (no), 81.38 GiB with ZeRO-1, over
// 80 GiB only with the 5 % fragmentation the platform assumes (tight: check's oom warning), and
// 56 GiB with ZeRO-2 (yes). JSON: fits and fits_unfragmented, from each stage's peaks.
TEST(Cli, CompareSaysTightWhereOnlyTheAssumedFragmentationOverflows) {
  const std::string memory = test::source_dir() + "/scenarios/teaching/memory.json";
  const auto r = test::run_trainsim(
      {"compare", memory, "--set", "zero=1", "--set", "zero=2", "--engine", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nfits               no      tight   yes\n"), std::string::npos) << r.out;
  const auto j = test::run_trainsim({"compare", memory, "--set", "zero=1", "--set", "zero=2",
                                     "--engine", "analytic", "--format", "json"});
  const auto columns = nlohmann::json::parse(j.out);
  ASSERT_EQ(columns.size(), 3u);
  const std::vector<std::pair<bool, bool>> want = {{false, false}, {false, true}, {true, true}};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(columns[i]["fits"], want[i].first) << i;
    EXPECT_EQ(columns[i]["fits_unfragmented"], want[i].second) << i;
  }
  // The report's stage carries both peaks; without fragmentation, the allocated peak plus the
  // 1.35 GiB outside the allocator, so (peak - 1.35 GiB) / 1.05 + 1.35 GiB.
  const auto run = test::run_trainsim(
      {"run", memory, "--zero", "1", "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto stage = nlohmann::json::parse(run.out)["stages"][0];
  const double reserved = 1.35 * (1 << 30);
  const double peak = stage["peak_memory_bytes"].get<double>();
  EXPECT_NEAR(stage["peak_unfragmented_bytes"].get<double>(), (peak - reserved) / 1.05 + reserved,
              2.0);
}

// A column whose plan has an error (pp 3 drops 2 of Llama 3.1 70B's 80 layers) says so in a row
// of its own; the others read "none", and without errors there is no such row.
TEST(Cli, CompareNamesAColumnsErrors) {
  const auto r = test::run_trainsim({"compare", kScenario, "--set", "pp=3,dp=4,gbs=96"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nerrors             none                layers-dropped\n"),
            std::string::npos)
      << r.out;
  const auto j =
      test::run_trainsim({"compare", kScenario, "--set", "pp=3,dp=4,gbs=96", "--format", "json"});
  const auto columns = nlohmann::json::parse(j.out);
  EXPECT_EQ(columns[0]["errors"], nlohmann::json::array());
  EXPECT_EQ(columns[1]["errors"], nlohmann::json::array({"layers-dropped"}));
  const auto clean = test::run_trainsim({"compare", kScenario, "--set", "recompute=full"});
  EXPECT_EQ(clean.out.find("errors"), std::string::npos) << clean.out;
}

}  // namespace
}  // namespace trainsim
