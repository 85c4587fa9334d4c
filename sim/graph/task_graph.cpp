#include "sim/graph/task_graph.hpp"

namespace trainsim {

CommKind comm_kind(Dim d) {
  switch (info(d).traffic) {
    case Dim::kCP:
      return CommKind::kCP;
    case Dim::kEP:
      return CommKind::kEP;
    case Dim::kDP:
      return CommKind::kDP;
    case Dim::kPP:
      return CommKind::kPP;
    default:
      return CommKind::kTP;
  }
}

const char* to_string(CommKind kind) {
  switch (kind) {
    case CommKind::kTP:
      return "tp";
    case CommKind::kPP:
      return "pp";
    case CommKind::kDP:
      return "dp";
    case CommKind::kCP:
      return "cp";
    case CommKind::kEP:
      return "ep";
  }
  return "?";
}

const char* to_string(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kForward:
      return "forward";
    case ComputeKind::kBackward:
      return "backward";
    case ComputeKind::kBackwardInput:
      return "backward_input";
    case ComputeKind::kBackwardWeight:
      return "backward_weight";
    case ComputeKind::kRecompute:
      return "recompute";
    case ComputeKind::kOptimizer:
      return "optimizer";
    case ComputeKind::kOther:
      return "other";
    case ComputeKind::kWait:
      return "wait";
  }
  return "?";
}

const char* pass_label(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kForward:
      return "F";
    case ComputeKind::kBackward:
      return "B";
    case ComputeKind::kBackwardInput:
      return "B-input";
    case ComputeKind::kBackwardWeight:
      return "W";
    case ComputeKind::kRecompute:
      return "R";
    case ComputeKind::kOptimizer:
      return "optimizer";
    case ComputeKind::kOther:
    case ComputeKind::kWait:
      break;
  }
  return "other";
}

const char* to_string(Stream stream) {
  switch (stream) {
    case Stream::kCompute:
      return "compute";
    case Stream::kTP:
      return "tp";
    case Stream::kDP:
      return "dp";
    case Stream::kSendActivation:
      return "send_activation";
    case Stream::kSendGradient:
      return "send_gradient";
    case Stream::kRecvActivation:
      return "recv_activation";
    case Stream::kRecvGradient:
      return "recv_gradient";
    case Stream::kCP:
      return "cp";
    case Stream::kEP:
      return "ep";
  }
  return "?";
}

std::size_t TaskGraph::num_ops() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.ops.size();
  return n;
}

}  // namespace trainsim
