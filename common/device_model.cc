#include "common/device_model.h"

namespace kube_rdma {

std::string toString(PortState state) {
  switch (state) {
  case PortState::kNop:
    return "NOP";
  case PortState::kDown:
    return "DOWN";
  case PortState::kInit:
    return "INIT";
  case PortState::kArmed:
    return "ARMED";
  case PortState::kActive:
    return "ACTIVE";
  case PortState::kActiveDefer:
    return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

std::string toString(LinkLayer layer) {
  switch (layer) {
  case LinkLayer::kInfiniBand:
    return "InfiniBand";
  case LinkLayer::kEthernet:
    return "Ethernet";
  case LinkLayer::kUnknown:
    break;
  }
  return "Unknown";
}

std::string toString(GidType type) {
  switch (type) {
  case GidType::kRoceV1:
    return "v1";
  case GidType::kRoceV2:
    return "v2";
  case GidType::kUnknown:
    break;
  }
  return "";
}

} // namespace kube_rdma
