#include "sim/graph/graph_json.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"

namespace trainsim {

namespace {

template <typename Enum, std::size_t N>
Enum enum_from(JsonObject& o, const char* key, const std::array<Enum, N>& values) {
  std::vector<std::string_view> names;
  for (auto v : values) names.emplace_back(to_string(v));
  auto s = o.choice(key, names);
  for (auto v : values) {
    if (s == to_string(v)) return v;
  }
  return values[0];
}

constexpr std::array<CommKind, 5> kCommKinds = {CommKind::kTP, CommKind::kPP, CommKind::kDP,
                                                CommKind::kCP, CommKind::kEP};
constexpr std::array<Dim, kNumDims> kDims = all_dims();
constexpr std::array<CollectiveKind, kNumCollectiveKinds> kCollectives = {
    CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
    CollectiveKind::kAllToAll,  CollectiveKind::kBroadcast, CollectiveKind::kSendRecv};
constexpr std::array<ComputeKind, 8> kComputeKinds = {
    ComputeKind::kForward,        ComputeKind::kBackward,  ComputeKind::kBackwardInput,
    ComputeKind::kBackwardWeight, ComputeKind::kRecompute, ComputeKind::kOptimizer,
    ComputeKind::kOther,          ComputeKind::kWait};

// The dimension a kind of traffic is named after: the first in kDims that carries it.
Dim own_dim(CommKind kind) {
  for (const Dim d : kDims) {
    if (comm_kind(d) == kind) return d;
  }
  return Dim::kTP;
}

nlohmann::json transfer_json(const Transfer& t) {
  return {{"peer", t.peer}, {"channel", t.channel}, {"bytes", t.bytes}};
}

}  // namespace

nlohmann::json task_graph_to_json(const TaskGraph& graph) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : graph.groups) {
    groups.push_back(
        {{"kind", to_string(g.kind())}, {"dim", to_string(g.dim)}, {"members", g.members}});
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : graph.ranks) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : r.ops) {
      nlohmann::json o;
      switch (op.type) {
        case OpType::kCompute:
          o = {{"op", "compute"}, {"kind", to_string(op.compute)}, {"seconds", op.seconds}};
          if (op.compute == ComputeKind::kWait) o["comm"] = to_string(op.comm);
          break;
        case OpType::kCollective:
          o = {{"op", "collective"},
               {"comm", to_string(op.comm)},
               {"collective", to_string(op.collective)},
               {"group", op.group},
               {"bytes", op.bytes},
               {"count", op.count}};
          break;
        case OpType::kP2P: {
          nlohmann::json sends = nlohmann::json::array();
          nlohmann::json recvs = nlohmann::json::array();
          for (std::uint32_t i = 0; i < op.num_sends; ++i) {
            sends.push_back(transfer_json(r.transfers[op.first_transfer + i]));
          }
          for (std::uint32_t i = 0; i < op.num_recvs; ++i) {
            recvs.push_back(transfer_json(r.transfers[op.first_transfer + op.num_sends + i]));
          }
          o = {{"op", "p2p"}, {"comm", to_string(op.comm)}, {"sends", sends}, {"recvs", recvs}};
          break;
        }
      }
      if (op.microbatch >= 0) o["microbatch"] = op.microbatch;
      ops.push_back(std::move(o));
    }
    ranks.push_back({{"stage", r.stage}, {"ops", std::move(ops)}});
  }
  return {{"groups", std::move(groups)}, {"ranks", std::move(ranks)}};
}

namespace {

Group read_group(JsonObject o, std::int64_t num_ranks) {
  Group grp;
  const CommKind kind = enum_from(o, "kind", kCommKinds);
  // "dim" (optional): the dimension whose group this is; without it, the kind's own.
  grp.dim = own_dim(kind);
  if (o.has("dim")) {
    grp.dim = enum_from(o, "dim", kDims);
    if (grp.kind() != kind) {
      o.fail("dim", std::string(to_string(grp.dim)) + " groups carry " + to_string(grp.kind()) +
                        " traffic, not " + to_string(kind));
    }
  }
  const auto& members = o.raw("members");
  if (!members.is_array() || members.empty()) o.fail("members", "must be a non-empty array");
  for (const auto& mbr : members) {
    if (!mbr.is_number_integer() || mbr.get<std::int64_t>() < 0 ||
        mbr.get<std::int64_t>() >= num_ranks) {
      o.fail("members", "must hold rank numbers in [0, " + std::to_string(num_ranks - 1) + "]");
    }
    grp.members.push_back(mbr.get<std::int32_t>());
  }
  o.finish();
  return grp;
}

// A p2p op's sends, then its receives, appended to the program's transfers.
void read_transfers(JsonObject& o, Op& op, RankProgram& prog, IntRange rank_range) {
  op.first_transfer = static_cast<std::uint32_t>(prog.transfers.size());
  for (const char* side : {"sends", "recvs"}) {
    const auto& list = o.raw(side);
    if (!list.is_array()) o.fail(side, "must be an array");
    for (std::size_t t = 0; t < list.size(); ++t) {
      JsonObject to(list[t], o.file(), o.path() + "." + side + "[" + std::to_string(t) + "]");
      Transfer tr;
      tr.peer = static_cast<std::int32_t>(to.integer("peer", rank_range));
      tr.channel = static_cast<std::int32_t>(to.integer("channel", {0}));
      tr.bytes = to.number("bytes", {0.0, true});
      to.finish();
      prog.transfers.push_back(tr);
    }
    (side[0] == 's' ? op.num_sends : op.num_recvs) = static_cast<std::uint16_t>(list.size());
  }
}

Op read_op(JsonObject o, RankProgram& prog, IntRange rank_range, IntRange group_range) {
  Op op;
  op.microbatch = static_cast<std::int32_t>(o.optional_integer("microbatch", {0}).value_or(-1));
  auto type = o.choice("op", {"compute", "collective", "p2p"});
  if (type == "compute") {
    op.type = OpType::kCompute;
    op.compute = enum_from(o, "kind", kComputeKinds);
    if (op.compute == ComputeKind::kWait) op.comm = enum_from(o, "comm", kCommKinds);
    op.seconds = o.number("seconds", {0.0, true});
  } else if (type == "collective") {
    op.type = OpType::kCollective;
    op.comm = enum_from(o, "comm", kCommKinds);
    op.collective = enum_from(o, "collective", kCollectives);
    op.group = static_cast<std::int32_t>(o.integer("group", group_range));
    op.bytes = o.number("bytes", {0.0, true});
    op.count = static_cast<std::int32_t>(o.integer("count", {1, 1 << 30}));
  } else {
    op.type = OpType::kP2P;
    op.comm = enum_from(o, "comm", kCommKinds);
    read_transfers(o, op, prog, rank_range);
  }
  o.finish();
  return op;
}

}  // namespace

TaskGraph task_graph_from_json(const nlohmann::json& j, const std::string& file) {
  JsonObject top(j, file);
  TaskGraph g;
  const auto& groups = top.raw("groups");
  const auto& ranks = top.raw("ranks");
  if (!groups.is_array()) top.fail("groups", "must be an array");
  if (!ranks.is_array() || ranks.empty()) top.fail("ranks", "must be a non-empty array");
  top.finish();
  const auto num_ranks = static_cast<std::int64_t>(ranks.size());
  const IntRange rank_range{0, num_ranks - 1};
  for (std::size_t i = 0; i < groups.size(); ++i) {
    g.groups.push_back(
        read_group(JsonObject(groups[i], file, "$.groups[" + std::to_string(i) + "]"), num_ranks));
  }
  const IntRange group_range{0, static_cast<std::int64_t>(g.groups.size()) - 1};
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::string rpath = "$.ranks[" + std::to_string(r) + "]";
    JsonObject ro(ranks[r], file, rpath);
    RankProgram prog;
    prog.stage = static_cast<std::int32_t>(ro.integer("stage", {0}));
    const auto& ops = ro.raw("ops");
    if (!ops.is_array()) ro.fail("ops", "must be an array");
    ro.finish();
    for (std::size_t k = 0; k < ops.size(); ++k) {
      JsonObject o(ops[k], file, rpath + ".ops[" + std::to_string(k) + "]");
      prog.ops.push_back(read_op(std::move(o), prog, rank_range, group_range));
    }
    g.ranks.push_back(std::move(prog));
  }
  return g;
}

}  // namespace trainsim
