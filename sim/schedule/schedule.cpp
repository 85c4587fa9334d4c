#include "sim/schedule/schedule.hpp"

#include <algorithm>
#include <cassert>

namespace trainsim {

namespace {

class ProgramBuilder {
 public:
  ProgramBuilder(std::int64_t stage, std::int64_t stages)
      : first_(stage == 0), last_(stage == stages - 1) {}

  void compute(Pass pass, std::int64_t mb) {
    ScheduleStep s;
    s.kind = ScheduleStep::Kind::kCompute;
    s.pass = pass;
    s.microbatch = mb;
    steps_.push_back(s);
  }

  // One batched exchange; directions this stage has no peer for are dropped.
  void exchange(std::vector<Exchange> sends, std::vector<Exchange> recvs) {
    auto has_peer_send = [&](const Exchange& e) {
      return e.flow == Flow::kActivation ? !last_ : !first_;
    };
    auto has_peer_recv = [&](const Exchange& e) {
      return e.flow == Flow::kActivation ? !first_ : !last_;
    };
    ScheduleStep s;
    s.kind = ScheduleStep::Kind::kComm;
    for (auto& e : sends) {
      if (has_peer_send(e)) s.sends.push_back(e);
    }
    for (auto& e : recvs) {
      if (has_peer_recv(e)) s.recvs.push_back(e);
    }
    if (!s.sends.empty() || !s.recvs.empty()) steps_.push_back(std::move(s));
  }

  std::vector<ScheduleStep> take() { return std::move(steps_); }

 private:
  bool first_;
  bool last_;
  std::vector<ScheduleStep> steps_;
};

void gpipe(ProgramBuilder& b, std::int64_t m) {
  for (std::int64_t i = 0; i < m; ++i) {
    b.exchange({}, {{Flow::kActivation, i}});
    b.compute(Pass::kForward, i);
    b.exchange({{Flow::kActivation, i}}, {});
  }
  for (std::int64_t i = 0; i < m; ++i) {
    b.exchange({}, {{Flow::kGradient, i}});
    b.compute(Pass::kBackward, i);
    b.exchange({{Flow::kGradient, i}}, {});
  }
}

void one_f_one_b(ProgramBuilder& b, std::int64_t stage, std::int64_t stages, std::int64_t m) {
  const std::int64_t warmup = warmup_microbatches(stage, stages, m);
  const std::int64_t remaining = m - warmup;
  std::int64_t next_fwd = 0;
  std::int64_t next_bwd = 0;
  for (std::int64_t i = 0; i < warmup; ++i) {
    b.exchange({}, {{Flow::kActivation, next_fwd}});
    b.compute(Pass::kForward, next_fwd);
    b.exchange({{Flow::kActivation, next_fwd}}, {});
    ++next_fwd;
  }
  if (remaining > 0) b.exchange({}, {{Flow::kActivation, next_fwd}});
  for (std::int64_t i = 0; i < remaining; ++i) {
    const bool last_iteration = i == remaining - 1;
    b.compute(Pass::kForward, next_fwd);
    b.exchange({{Flow::kActivation, next_fwd}}, {{Flow::kGradient, next_bwd}});
    ++next_fwd;
    b.compute(Pass::kBackward, next_bwd);
    if (last_iteration) {
      b.exchange({{Flow::kGradient, next_bwd}}, {});
    } else {
      b.exchange({{Flow::kGradient, next_bwd}}, {{Flow::kActivation, next_fwd}});
    }
    ++next_bwd;
  }
  for (std::int64_t i = 0; i < warmup; ++i) {
    b.exchange({}, {{Flow::kGradient, next_bwd}});
    b.compute(Pass::kBackward, next_bwd);
    b.exchange({{Flow::kGradient, next_bwd}}, {});
    ++next_bwd;
  }
  assert(next_fwd == m && next_bwd == m);
}

}  // namespace

std::int64_t warmup_microbatches(std::int64_t stage, std::int64_t stages, std::int64_t m) {
  return std::min(stages - stage - 1, m);
}

std::vector<ScheduleStep> stage_program(PipelineSchedule schedule, std::int64_t stage,
                                        std::int64_t stages, std::int64_t microbatches) {
  assert(stage >= 0 && stage < stages && microbatches >= 1);
  ProgramBuilder b(stage, stages);
  if (schedule == PipelineSchedule::kGPipe) {
    gpipe(b, microbatches);
  } else {
    one_f_one_b(b, stage, stages, microbatches);
  }
  return b.take();
}

}  // namespace trainsim
