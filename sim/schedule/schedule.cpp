#include "sim/schedule/schedule.hpp"

#include <algorithm>
#include <cassert>

namespace trainsim {

namespace {

class ProgramBuilder {
 public:
  ProgramBuilder(std::int64_t stage, std::int64_t stages, bool ring)
      : first_(stage == 0), last_(stage == stages - 1), ring_(ring) {}

  void compute(Pass pass, std::int64_t mb, std::int64_t chunk = 0) {
    ScheduleStep s;
    s.kind = ScheduleStep::Kind::kCompute;
    s.pass = pass;
    s.microbatch = mb;
    s.chunk = chunk;
    steps_.push_back(s);
  }

  // One batched exchange. Without a ring (no interleaving) the directions this stage has no
  // peer for are dropped; interleaved schedules decide their exchanges themselves.
  void exchange(std::vector<Exchange> sends, std::vector<Exchange> recvs) {
    ScheduleStep s;
    s.kind = ScheduleStep::Kind::kComm;
    for (auto& e : sends) {
      if (ring_ || (e.flow == Flow::kActivation ? !last_ : !first_)) s.sends.push_back(e);
    }
    for (auto& e : recvs) {
      if (ring_ || (e.flow == Flow::kActivation ? !first_ : !last_)) s.recvs.push_back(e);
    }
    if (!s.sends.empty() || !s.recvs.empty()) steps_.push_back(std::move(s));
  }

  std::vector<ScheduleStep> take() { return std::move(steps_); }

 private:
  bool first_;
  bool last_;
  bool ring_;
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

// Qi et al.'s ZB-H1 as its DeepSpeed pipe schedule issues it (blocking exchanges one by one).
void zb_h1(ProgramBuilder& b, std::int64_t stage, std::int64_t stages, std::int64_t m) {
  const bool first = stage == 0;
  const bool last = stage == stages - 1;
  const std::int64_t warm = stages - stage;
  std::int64_t forward = 0;
  std::int64_t backward = 0;
  std::int64_t weight = 0;
  std::int64_t next_w = 0;  // deferred weight gradients run oldest first
  auto recv = [&](Flow f, std::int64_t mb) { b.exchange({}, {{f, mb}}); };
  auto send = [&](Flow f, std::int64_t mb) { b.exchange({{f, mb}}, {}); };
  auto weight_pass = [&] { b.compute(Pass::kBackwardWeight, next_w++); };
  // Input gradient and, except on the first stage, its weight gradient deferred or not.
  auto backward_pass = [&](std::int64_t bwd, bool with_weight) {
    if (first) {
      b.compute(Pass::kBackward, bwd);
      ++next_w;
      return;
    }
    b.compute(Pass::kBackwardInput, bwd);
    send(Flow::kGradient, bwd);
    if (with_weight) weight_pass();
  };
  for (std::int64_t i = 0; i < warm - 1 && forward < m; ++i) {
    recv(Flow::kActivation, forward);
    b.compute(Pass::kForward, forward);
    send(Flow::kActivation, forward);
    ++forward;
  }
  for (std::int64_t i = 0; i < stage && forward < m; ++i) {
    recv(Flow::kActivation, forward);
    b.compute(Pass::kForward, forward);
    if (!last) {
      recv(Flow::kGradient, backward);
      send(Flow::kActivation, forward);
    }
    backward_pass(backward, false);
    ++forward;
    ++backward;
  }
  while (forward < m) {
    recv(Flow::kActivation, forward);
    b.compute(Pass::kForward, forward);
    if (!last) {
      recv(Flow::kGradient, backward);
      send(Flow::kActivation, forward);
    }
    backward_pass(backward, true);
    ++forward;
    ++backward;
    ++weight;
  }
  while (backward < m) {
    if (!last) recv(Flow::kGradient, backward);
    backward_pass(backward, true);
    ++backward;
    ++weight;
  }
  for (; weight < m; ++weight) weight_pass();
  assert(first ? next_w == m : next_w == m);
}

class Interleaved {
 public:
  Interleaved(const ScheduleConfig& c, std::int64_t stage)
      : p_(c.stages),
        s_(stage),
        m_(c.microbatches),
        v_(c.chunks),
        group_(c.group_size > 0 ? c.group_size : c.stages),
        table_(interleaved_schedule_table(m_, v_, group_)),
        total_(m_ * v_) {}

  void build(ProgramBuilder& b) {
    std::int64_t warmup = (p_ - s_ - 1) * 2 + (v_ - 1) * group_;
    const bool all_warmup = warmup >= total_;
    if (all_warmup) warmup = total_;
    const std::int64_t remaining = total_ - warmup;
    const bool first = s_ == 0;
    const bool last = s_ == p_ - 1;

    if (!first) b.exchange({}, {{Flow::kActivation, mb(0), 0}});
    for (std::int64_t k = 0; k < warmup; ++k) {
      const auto c = chunk(k, true);
      b.compute(Pass::kForward, mb(k), c);
      auto [recv_prev, next_mb, next_chunk] = from_previous(k, true);
      if (k == total_ - 1) recv_prev = false;
      std::vector<Exchange> sends;
      if (!(c == v_ - 1 && last)) sends.push_back({Flow::kActivation, mb(k), c});
      std::vector<Exchange> recvs;
      if (recv_prev) recvs.push_back({Flow::kActivation, next_mb, next_chunk});
      if (k == warmup - 1 && !all_warmup && !last) {
        recvs.push_back({Flow::kGradient, mb(0), v_ - 1});
      }
      b.exchange(std::move(sends), std::move(recvs));
    }
    for (std::int64_t k = 0; k < remaining; ++k) {
      const std::int64_t fk = k + warmup;
      const auto cf = chunk(fk, true);
      const auto cb = chunk(k, false);
      b.compute(Pass::kForward, mb(fk), cf);
      b.compute(Pass::kBackward, mb(k), cb);
      auto [recv_prev, mb_f, next_f] = from_previous(fk, true);
      auto [recv_next, mb_b, next_b] = from_previous(k, false);
      if (k == remaining - 1) recv_prev = false;
      std::vector<Exchange> sends;
      if (!(cf == v_ - 1 && last)) sends.push_back({Flow::kActivation, mb(fk), cf});
      if (!(cb == 0 && first)) sends.push_back({Flow::kGradient, mb(k), cb});
      std::vector<Exchange> recvs;
      if (recv_prev) recvs.push_back({Flow::kActivation, mb_f, next_f});
      if (recv_next) recvs.push_back({Flow::kGradient, mb_b, next_b});
      b.exchange(std::move(sends), std::move(recvs));
    }
    if (all_warmup && !last) b.exchange({}, {{Flow::kGradient, mb(remaining), v_ - 1}});
    for (std::int64_t k = remaining; k < total_; ++k) {
      const auto c = chunk(k, false);
      b.compute(Pass::kBackward, mb(k), c);
      auto [recv_next, next_mb, next_b] = from_previous(k, false);
      if (k == total_ - 1) recv_next = false;
      std::vector<Exchange> sends;
      if (!(c == 0 && first)) sends.push_back({Flow::kGradient, mb(k), c});
      std::vector<Exchange> recvs;
      if (recv_next) recvs.push_back({Flow::kGradient, next_mb, next_b});
      b.exchange(std::move(sends), std::move(recvs));
    }
  }

 private:
  std::int64_t chunk(std::int64_t vmb, bool forward) const {
    const auto c = table_[static_cast<std::size_t>(vmb % total_)].chunk;
    return forward ? c : v_ - 1 - c;
  }
  std::int64_t mb(std::int64_t vmb) const {
    return table_[static_cast<std::size_t>(vmb % total_)].microbatch;
  }

  struct Incoming {
    bool recv;
    std::int64_t microbatch;
    std::int64_t chunk;
  };
  // Megatron-LM's recv_tensor_from_previous_stage: whether a tensor arrives from the neighbour
  // after virtual micro-batch `vmb`, and for which micro-batch and chunk. A stage inside the
  // pipeline receives the next virtual micro-batch's input; the leading stage (the first going
  // forward, the last going backward) receives what the other end of the ring finished p - 1
  // virtual micro-batches ago, for its next chunk.
  Incoming from_previous(std::int64_t vmb, bool forward) const {
    const bool leading = forward ? s_ == 0 : s_ == p_ - 1;
    if (!leading) return {true, mb(vmb + 1), chunk(vmb + 1, forward)};
    if (vmb < p_ - 1) return {false, 0, 0};
    const std::int64_t source = vmb - (p_ - 1);
    const std::int64_t c = chunk(source, forward);
    if (c == (forward ? v_ - 1 : 0)) return {false, 0, 0};
    return {true, mb(source), forward ? c + 1 : c - 1};
  }

  std::int64_t p_, s_, m_, v_, group_;
  std::vector<TableEntry> table_;
  std::int64_t total_;
};

}  // namespace

std::int64_t warmup_microbatches(std::int64_t stage, std::int64_t stages, std::int64_t m) {
  return std::min(stages - stage - 1, m);
}

std::vector<TableEntry> interleaved_schedule_table(std::int64_t microbatches, std::int64_t chunks,
                                                   std::int64_t group_size) {
  std::vector<TableEntry> table;
  for (std::int64_t lo = 0; lo < microbatches; lo += group_size) {
    const std::int64_t hi = lo + group_size >= microbatches ? microbatches : lo + group_size;
    for (std::int64_t c = 0; c < chunks; ++c) {
      for (std::int64_t mb = lo; mb < hi; ++mb) table.push_back({mb, c});
    }
    if (hi == microbatches) break;
  }
  return table;
}

const char* interleaving_problem(const ScheduleConfig& c) {
  const std::int64_t group = c.group_size > 0 ? c.group_size : c.stages;
  if (group > c.microbatches || group < c.stages) {
    return "the micro-batch group size must lie in [pp, micro-batches per step]";
  }
  const std::int64_t final_group = c.microbatches % group;
  if (final_group > 0 && final_group < c.stages) {
    return "the last micro-batch group must be empty or hold at least pp micro-batches";
  }
  return "";
}

std::vector<ScheduleStep> stage_program(const ScheduleConfig& config, std::int64_t stage) {
  assert(stage >= 0 && stage < config.stages && config.microbatches >= 1);
  const bool interleaved = config.schedule == PipelineSchedule::kInterleaved;
  ProgramBuilder b(stage, config.stages, interleaved);
  switch (config.schedule) {
    case PipelineSchedule::kGPipe:
      gpipe(b, config.microbatches);
      break;
    case PipelineSchedule::k1F1B:
      one_f_one_b(b, stage, config.stages, config.microbatches);
      break;
    case PipelineSchedule::kZBH1:
      zb_h1(b, stage, config.stages, config.microbatches);
      break;
    case PipelineSchedule::kInterleaved:
      Interleaved(config, stage).build(b);
      break;
  }
  return b.take();
}

}  // namespace trainsim
