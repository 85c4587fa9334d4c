#pragma once
// The analytic engine's replay state (sim/engine/analytic_engine.cpp): what each stream, each
// point-to-point channel, each op and each collective instance holds while the critical-path
// replay advances. Internal to that engine.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace trainsim::analytic {

inline constexpr double kNotDone = -1.0;  // an op not yet done

struct Posted {
  std::int32_t rank;
  std::uint32_t op;
  double time;
  double bytes;
  std::int16_t transfer;  // the message's place in the op's batch
};

struct Channel {
  std::deque<Posted> sends;
  std::deque<Posted> recvs;
};

// One stream of one rank: its ops in program order.
struct Actor {
  std::int32_t rank = 0;
  const std::vector<std::uint32_t>* ops = nullptr;  // the stream's ops (ReplayIndex)
  std::size_t pc = 0;
  double time = 0;       // when the stream is free
  bool waiting = false;  // posted its head op, waiting for peers
  // Dependencies of the head op already seen done, and the latest of their end times: a stream
  // woken again resumes the scan where it stopped, so an op waiting on thousands of others
  // costs linear time, not quadratic.
  std::uint32_t next_dep = 0;
  double deps_end = 0;
  std::int32_t next_waiter = -1;  // the next stream waiting for the same op
  bool queued = false;            // in the runnable queue
};

// Per op: the first stream waiting for it (a list threaded through Actor::next_waiter) and, for
// a point-to-point batch, its transfers still in flight and the latest end so far.
struct OpState {
  std::int32_t first_waiter = -1;
  std::int32_t pending = 0;
  double batch_end = 0;
};

struct Instance {
  std::int64_t arrived = 0;
  double latest = 0;
  std::vector<std::pair<std::int32_t, std::uint32_t>> members;  // (rank, op)
};

}  // namespace trainsim::analytic
