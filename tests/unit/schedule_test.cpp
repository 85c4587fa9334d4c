#include "sim/schedule/schedule.hpp"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>

namespace trainsim {
namespace {

std::vector<ScheduleStep> program(PipelineSchedule kind, std::int64_t stage, std::int64_t stages,
                                  std::int64_t m) {
  ScheduleConfig c;
  c.schedule = kind;
  c.stages = stages;
  c.microbatches = m;
  return stage_program(c, stage);
}

// Compact form of a program: "F0 B0 ..." for compute, "[s:a0 r:g1]" for an exchange.
std::string render(const std::vector<ScheduleStep>& steps) {
  std::string out;
  for (const auto& s : steps) {
    if (!out.empty()) out += ' ';
    if (s.kind == ScheduleStep::Kind::kCompute) {
      out += (s.pass == Pass::kForward ? "F" : "B") + std::to_string(s.microbatch);
      continue;
    }
    out += '[';
    std::string inner;
    for (const auto& e : s.sends) {
      inner += std::string(inner.empty() ? "" : " ") +
               "s:" + (e.flow == Flow::kActivation ? "a" : "g") + std::to_string(e.microbatch);
    }
    for (const auto& e : s.recvs) {
      inner += std::string(inner.empty() ? "" : " ") +
               "r:" + (e.flow == Flow::kActivation ? "a" : "g") + std::to_string(e.microbatch);
    }
    out += inner + ']';
  }
  return out;
}

// Compute passes only: F forward, B whole backward, b input gradient, W weight gradient; with
// chunks, "F3.1" is micro-batch 3 on chunk 1.
std::string computes(const std::vector<ScheduleStep>& steps, bool chunks = false) {
  std::string out;
  for (const auto& s : steps) {
    if (s.kind != ScheduleStep::Kind::kCompute) continue;
    if (!out.empty()) out += ' ';
    switch (s.pass) {
      case Pass::kForward:
        out += 'F';
        break;
      case Pass::kBackward:
        out += 'B';
        break;
      case Pass::kBackwardInput:
        out += 'b';
        break;
      case Pass::kBackwardWeight:
        out += 'W';
        break;
    }
    out += std::to_string(s.microbatch);
    if (chunks) out += "." + std::to_string(s.chunk);
  }
  return out;
}

ScheduleConfig interleaved(std::int64_t p, std::int64_t v, std::int64_t m, std::int64_t group = 0) {
  ScheduleConfig c;
  c.schedule = PipelineSchedule::kInterleaved;
  c.stages = p;
  c.chunks = v;
  c.microbatches = m;
  c.group_size = group;
  return c;
}

// Every message a stage sends towards a neighbour is received there, in the same order, by the
// chunk that follows the sender's in model order (virtual stage k -> k + 1); with interleaving
// the last stage's next stage is the first one.
void expect_matching_exchanges(const ScheduleConfig& c) {
  const auto p = c.stages;
  std::vector<std::vector<ScheduleStep>> programs;
  for (std::int64_t s = 0; s < p; ++s) programs.push_back(stage_program(c, s));
  for (std::int64_t s = 0; s < p; ++s) {
    const auto next = (s + 1) % p;
    if (c.chunks == 1 && next == 0) continue;
    // Activations s -> next, gradients next -> s, as (micro-batch, virtual stage) pairs.
    std::vector<std::pair<std::int64_t, std::int64_t>> sent_a, recv_a, sent_g, recv_g;
    for (const auto& st : programs[static_cast<std::size_t>(s)]) {
      for (const auto& e : st.sends) {
        if (e.flow == Flow::kActivation) sent_a.push_back({e.microbatch, e.chunk * p + s + 1});
      }
      for (const auto& e : st.recvs) {
        if (e.flow == Flow::kGradient) recv_g.push_back({e.microbatch, e.chunk * p + s + 1});
      }
    }
    for (const auto& st : programs[static_cast<std::size_t>(next)]) {
      for (const auto& e : st.recvs) {
        if (e.flow == Flow::kActivation) recv_a.push_back({e.microbatch, e.chunk * p + next});
      }
      for (const auto& e : st.sends) {
        if (e.flow == Flow::kGradient) sent_g.push_back({e.microbatch, e.chunk * p + next});
      }
    }
    EXPECT_EQ(sent_a, recv_a) << "p " << p << " v " << c.chunks << " m " << c.microbatches
                              << " stage " << s;
    EXPECT_EQ(sent_g, recv_g) << "p " << p << " v " << c.chunks << " m " << c.microbatches
                              << " stage " << s;
    const auto expected = c.microbatches * (next == 0 ? c.chunks - 1 : c.chunks);
    EXPECT_EQ(static_cast<std::int64_t>(sent_a.size()), expected);
  }
}

// Each stage runs every (micro-batch, chunk) forward once and its backward once, the backward
// after the forward, and (zero bubble) each weight gradient after its input gradient.
void expect_complete(const ScheduleConfig& c) {
  for (std::int64_t s = 0; s < c.stages; ++s) {
    std::map<std::pair<std::int64_t, std::int64_t>, std::string> seen;
    for (const auto& st : stage_program(c, s)) {
      if (st.kind != ScheduleStep::Kind::kCompute) continue;
      auto& h = seen[{st.microbatch, st.chunk}];
      switch (st.pass) {
        case Pass::kForward:
          EXPECT_EQ(h, "");
          h += 'F';
          break;
        case Pass::kBackward:
          EXPECT_EQ(h, "F");
          h += 'B';
          break;
        case Pass::kBackwardInput:
          EXPECT_EQ(h, "F");
          h += 'b';
          break;
        case Pass::kBackwardWeight:
          EXPECT_EQ(h, "Fb");
          h += 'W';
          break;
      }
    }
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), c.microbatches * c.chunks);
    for (const auto& [key, h] : seen) EXPECT_TRUE(h == "FB" || h == "FbW") << h;
  }
}

TEST(OneFOneB, MegatronOrder) {
  EXPECT_EQ(warmup_microbatches(0, 4, 8), 3);
  EXPECT_EQ(warmup_microbatches(3, 4, 8), 0);
  EXPECT_EQ(warmup_microbatches(0, 4, 2), 2);
  EXPECT_EQ(computes(program(PipelineSchedule::k1F1B, 0, 4, 6)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(computes(program(PipelineSchedule::k1F1B, 2, 4, 6)),
            "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  EXPECT_EQ(computes(program(PipelineSchedule::k1F1B, 3, 4, 6)),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
}

TEST(OneFOneB, ExchangesAsMegatronBatchesThem) {
  // Middle stage of 3 with 3 micro-batches: one warm-up forward, then the combined exchanges.
  EXPECT_EQ(render(program(PipelineSchedule::k1F1B, 1, 3, 3)),
            "[r:a0] F0 [s:a0] [r:a1] F1 [s:a1 r:g0] B0 [s:g0 r:a2] F2 [s:a2 r:g1] B1 [s:g1] "
            "[r:g2] B2 [s:g2]");
  // The first stage receives no activations, the last sends none.
  EXPECT_EQ(render(program(PipelineSchedule::k1F1B, 0, 2, 2)),
            "F0 [s:a0] F1 [s:a1 r:g0] B0 [r:g1] B1");
  EXPECT_EQ(render(program(PipelineSchedule::k1F1B, 1, 2, 2)),
            "[r:a0] F0 B0 [s:g0 r:a1] F1 B1 [s:g1]");
}

TEST(OneFOneB, NeighboursExchangeTheSameMessagesInTheSameOrder) {
  for (std::int64_t p : {2, 3, 4, 8}) {
    for (std::int64_t m : {1, 2, 3, 5, 8, 16}) {
      for (std::int64_t s = 0; s + 1 < p; ++s) {
        std::vector<std::int64_t> sent_a, recv_a, sent_g, recv_g;
        for (const auto& st : program(PipelineSchedule::k1F1B, s, p, m)) {
          for (const auto& e : st.sends) {
            if (e.flow == Flow::kActivation) sent_a.push_back(e.microbatch);
          }
          for (const auto& e : st.recvs) {
            if (e.flow == Flow::kGradient) recv_g.push_back(e.microbatch);
          }
        }
        for (const auto& st : program(PipelineSchedule::k1F1B, s + 1, p, m)) {
          for (const auto& e : st.recvs) {
            if (e.flow == Flow::kActivation) recv_a.push_back(e.microbatch);
          }
          for (const auto& e : st.sends) {
            if (e.flow == Flow::kGradient) sent_g.push_back(e.microbatch);
          }
        }
        EXPECT_EQ(sent_a, recv_a) << p << " " << m << " " << s;
        EXPECT_EQ(sent_g, recv_g) << p << " " << m << " " << s;
        EXPECT_EQ(static_cast<std::int64_t>(sent_a.size()), m);
      }
    }
  }
}

TEST(GPipe, AllForwardsThenAllBackwards) {
  EXPECT_EQ(computes(program(PipelineSchedule::kGPipe, 1, 4, 3)), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(render(program(PipelineSchedule::kGPipe, 0, 2, 2)),
            "F0 [s:a0] F1 [s:a1] [r:g0] B0 [r:g1] B1");
}

TEST(Interleaved, MegatronScheduleTable) {
  // Groups of pp micro-batches run chunk by chunk; the last group holds the remainder.
  std::string t;
  for (const auto& e : interleaved_schedule_table(6, 2, 4)) {
    t += std::to_string(e.microbatch) + "." + std::to_string(e.chunk) + " ";
  }
  EXPECT_EQ(t, "0.0 1.0 2.0 3.0 0.1 1.1 2.1 3.1 4.0 5.0 4.1 5.1 ");
}

TEST(Interleaved, MegatronOrderAndWarmup) {
  // Stage 0 of 2 with 2 chunks and 4 micro-batches: (p - s - 1) * 2 + (v - 1) * p = 4 warm-up
  // forwards, then forward/backward pairs, backwards visiting the chunks in reverse.
  EXPECT_EQ(computes(stage_program(interleaved(2, 2, 4), 0), true),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  // The last stage warms up with (v - 1) * p = 2 forwards.
  EXPECT_EQ(computes(stage_program(interleaved(2, 2, 4), 1), true),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // Warm-up as Megatron-LM counts it: 10 forwards on stage 0 of 4 with v 2, m 8.
  const auto steps = stage_program(interleaved(4, 2, 8), 0);
  std::int64_t leading_forwards = 0;
  for (const auto& st : steps) {
    if (st.kind != ScheduleStep::Kind::kCompute) continue;
    if (st.pass != Pass::kForward) break;
    ++leading_forwards;
  }
  EXPECT_EQ(leading_forwards, 11);  // 10 warm-up forwards, then the first steady forward
}

TEST(Interleaved, ExchangesMatchAroundTheRing) {
  for (std::int64_t p : {2, 3, 4, 8}) {
    for (std::int64_t v : {2, 3, 4}) {
      for (std::int64_t m : {p, 2 * p, 3 * p}) {
        expect_matching_exchanges(interleaved(p, v, m));
        expect_complete(interleaved(p, v, m));
      }
    }
  }
  // Micro-batch counts that are not a multiple of pp, where Megatron-LM accepts them.
  for (auto [p, m, group] :
       std::vector<std::array<std::int64_t, 3>>{{4, 6, 6}, {4, 10, 5}, {2, 5, 5}, {3, 7, 4}}) {
    ASSERT_STREQ(interleaving_problem(interleaved(p, 2, m, group)), "");
    expect_matching_exchanges(interleaved(p, 2, m, group));
    expect_complete(interleaved(p, 2, m, group));
  }
}

TEST(Interleaved, RejectsWhatMegatronRejects) {
  EXPECT_STRNE(interleaving_problem(interleaved(4, 2, 10)), "");    // last group of 2 < pp
  EXPECT_STRNE(interleaving_problem(interleaved(4, 2, 3)), "");     // fewer micro-batches than pp
  EXPECT_STRNE(interleaving_problem(interleaved(4, 2, 8, 3)), "");  // group smaller than pp
  EXPECT_STRNE(interleaving_problem(interleaved(4, 2, 8, 9)), "");  // group larger than m
  EXPECT_STREQ(interleaving_problem(interleaved(4, 2, 12)), "");
}

TEST(ZeroBubbleH1, WeightGradientsDeferredByStage) {
  // Stage s defers its weight gradients by s micro-batches; the first stage runs whole
  // backwards (nothing to defer), the last defers p - 1 and drains them at the end.
  EXPECT_EQ(computes(program(PipelineSchedule::kZBH1, 0, 4, 6)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(computes(program(PipelineSchedule::kZBH1, 1, 4, 6)),
            "F0 F1 F2 b0 F3 b1 W0 F4 b2 W1 F5 b3 W2 b4 W3 b5 W4 W5");
  EXPECT_EQ(computes(program(PipelineSchedule::kZBH1, 3, 4, 6)),
            "F0 b0 F1 b1 F2 b2 F3 b3 W0 F4 b4 W1 F5 b5 W2 W3 W4 W5");
}

TEST(ZeroBubbleH1, ExchangesMatch) {
  for (std::int64_t p : {2, 3, 4, 8}) {
    for (std::int64_t m : {p, p + 1, 2 * p, std::int64_t{16}}) {
      ScheduleConfig c;
      c.schedule = PipelineSchedule::kZBH1;
      c.stages = p;
      c.microbatches = m;
      expect_matching_exchanges(c);
      expect_complete(c);
    }
  }
}

}  // namespace
}  // namespace trainsim
