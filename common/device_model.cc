#include "common/device_model.h"

#include <iterator>

namespace kube_rdma {

std::string toString(PortState state) {
  static constexpr const char* kNames[] = {"NOP",   "DOWN",   "INIT",
                                           "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  const auto i = static_cast<size_t>(state);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
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
