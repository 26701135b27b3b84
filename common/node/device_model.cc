#include "common/node/device_model.h"

#include <iterator>

namespace kube_rdma {

std::string toString(PortState state) {
  static constexpr const char* kNames[] = {"NOP",   "DOWN",   "INIT",
                                           "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  const auto i = static_cast<size_t>(state);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

std::string toString(LinkLayer layer) {
  static constexpr const char* kNames[] = {"Unknown", "InfiniBand", "Ethernet"};
  static_assert(std::size(kNames) == static_cast<size_t>(LinkLayer::kEthernet) + 1);
  return kNames[static_cast<size_t>(layer)];
}

std::string toString(GidType type) {
  static constexpr const char* kNames[] = {"", "v1", "v2"};
  static_assert(std::size(kNames) == static_cast<size_t>(GidType::kRoceV2) + 1);
  return kNames[static_cast<size_t>(type)];
}

} // namespace kube_rdma
