#pragma once
// What the analytic engine's replays of one graph share (sim/engine/analytic_engine.cpp): each
// stream's ops in program order, each collective op's call number on its group and each group's
// prices. Built once per graph; the replay with the compute slowdown runs twice on it.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/engine/collective_replay.hpp"
#include "sim/engine/engine.hpp"

namespace trainsim {

// What both replays of a graph share: its streams' ops, each collective op's call number and
// each group's prices.
struct ReplayIndex {
  ReplayIndex(const TaskGraph& g, const Topology& topo, CollectiveShapes& shapes)
      : calls(collective_call_numbers(g)), groups(group_collectives(g, topo, shapes)) {
    actor_of.resize(g.ranks.size());
    for (std::size_t r = 0; r < g.ranks.size(); ++r) {
      const auto& ops = g.ranks[r].ops;
      auto& by_stream = actor_of[r];
      by_stream.fill(-1);
      for (std::uint32_t i = 0; i < ops.size(); ++i) {
        auto& a = by_stream[static_cast<std::size_t>(ops[i].stream)];
        if (a < 0) {
          a = static_cast<std::int32_t>(streams.size());
          streams.push_back({static_cast<std::int32_t>(r), {}});
        }
        streams[static_cast<std::size_t>(a)].ops.push_back(i);
      }
    }
  }

  struct StreamOps {
    std::int32_t rank;
    std::vector<std::uint32_t> ops;  // in program order
  };
  std::vector<std::vector<std::int32_t>> calls;
  std::vector<GroupCollectives> groups;
  std::vector<StreamOps> streams;
  std::vector<std::array<std::int32_t, kNumStreams>> actor_of;  // by rank and stream
};

}  // namespace trainsim
