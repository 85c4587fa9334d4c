#include "sim/schedule/schedule.hpp"

#include <gtest/gtest.h>

#include <string>

namespace trainsim {
namespace {

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

std::string computes(const std::vector<ScheduleStep>& steps) {
  std::string out;
  for (const auto& s : steps) {
    if (s.kind != ScheduleStep::Kind::kCompute) continue;
    if (!out.empty()) out += ' ';
    out += (s.pass == Pass::kForward ? "F" : "B") + std::to_string(s.microbatch);
  }
  return out;
}

TEST(OneFOneB, MegatronOrder) {
  EXPECT_EQ(warmup_microbatches(0, 4, 8), 3);
  EXPECT_EQ(warmup_microbatches(3, 4, 8), 0);
  EXPECT_EQ(warmup_microbatches(0, 4, 2), 2);
  EXPECT_EQ(computes(stage_program(PipelineSchedule::k1F1B, 0, 4, 6)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(computes(stage_program(PipelineSchedule::k1F1B, 2, 4, 6)),
            "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  EXPECT_EQ(computes(stage_program(PipelineSchedule::k1F1B, 3, 4, 6)),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
}

TEST(OneFOneB, ExchangesAsMegatronBatchesThem) {
  // Middle stage of 3 with 3 micro-batches: one warm-up forward, then the combined exchanges.
  EXPECT_EQ(render(stage_program(PipelineSchedule::k1F1B, 1, 3, 3)),
            "[r:a0] F0 [s:a0] [r:a1] F1 [s:a1 r:g0] B0 [s:g0 r:a2] F2 [s:a2 r:g1] B1 [s:g1] "
            "[r:g2] B2 [s:g2]");
  // The first stage receives no activations, the last sends none.
  EXPECT_EQ(render(stage_program(PipelineSchedule::k1F1B, 0, 2, 2)),
            "F0 [s:a0] F1 [s:a1 r:g0] B0 [r:g1] B1");
  EXPECT_EQ(render(stage_program(PipelineSchedule::k1F1B, 1, 2, 2)),
            "[r:a0] F0 B0 [s:g0 r:a1] F1 B1 [s:g1]");
}

TEST(OneFOneB, NeighboursExchangeTheSameMessagesInTheSameOrder) {
  for (std::int64_t p : {2, 3, 4, 8}) {
    for (std::int64_t m : {1, 2, 3, 5, 8, 16}) {
      for (std::int64_t s = 0; s + 1 < p; ++s) {
        std::vector<std::int64_t> sent_a, recv_a, sent_g, recv_g;
        for (const auto& st : stage_program(PipelineSchedule::k1F1B, s, p, m)) {
          for (const auto& e : st.sends) {
            if (e.flow == Flow::kActivation) sent_a.push_back(e.microbatch);
          }
          for (const auto& e : st.recvs) {
            if (e.flow == Flow::kGradient) recv_g.push_back(e.microbatch);
          }
        }
        for (const auto& st : stage_program(PipelineSchedule::k1F1B, s + 1, p, m)) {
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
  EXPECT_EQ(computes(stage_program(PipelineSchedule::kGPipe, 1, 4, 3)), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(render(stage_program(PipelineSchedule::kGPipe, 0, 2, 2)),
            "F0 [s:a0] F1 [s:a1] [r:g0] B0 [r:g1] B1");
}

}  // namespace
}  // namespace trainsim
