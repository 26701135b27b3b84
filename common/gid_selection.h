#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/device_model.h"
#include "common/result.h"

// NCCL 2.21+'s automatic GID choice for a RoCE port when NCCL_IB_GID_INDEX is unset
// (NCCL's net_ib.cc, ncclIbGetGidIndex): the lowest-index GID of the wanted address
// family (NCCL_IB_ADDR_FAMILY, IPv4 by default) and RoCE version (NCCL_IB_ROCE_VERSION_NUM, 2 by
// default), inside NCCL_IB_ADDR_RANGE when set, never all-zero and never link-local (fe80::/64).
// Entries whose type could not be read (EINVAL in a container) are skipped, as NCCL >= 2.26.2 does.
namespace kube_rdma {

enum class GidFamily { kIPv4, kIPv6 };

// One CIDR, as NCCL_IB_ADDR_RANGE takes it ("10.1.0.0/16", "fd00::/8").
struct Cidr {
  GidFamily family = GidFamily::kIPv4;
  std::array<uint8_t, 16> address{}; // IPv4 in the first 4 bytes
  uint32_t prefix_length = 0;
  bool operator==(const Cidr&) const = default;
};

// Errors name the problem: no "/", a bad address, a prefix length out of range, a list (NCCL reads
// only the first CIDR of "a/16,b/16").
Result<Cidr> parseCidr(std::string_view text);

struct GidSelectionPolicy {
  GidFamily family = GidFamily::kIPv4;
  GidType roce_version = GidType::kRoceV2;
  std::optional<Cidr> range;
  bool operator==(const GidSelectionPolicy&) const = default;
};

// Whether NCCL's rule would take this entry of a RoCE port's table (the lowest-index one that
// qualifies is the one it picks).
bool gidQualifies(const GidEntry& entry, const GidSelectionPolicy& policy);

// The GID index NCCL picks on this port, or nullopt when nothing qualifies (NCCL then falls back to
// index 0, the link-local RoCE v1 GID) or the port is not a RoCE (Ethernet) port.
std::optional<uint32_t> selectGidIndex(const Port& port, const GidSelectionPolicy& policy);

// The index every given RoCE port picks, when they all pick the same one; nullopt when any RoCE
// port picks none, they disagree, or no RoCE port is given. InfiniBand ports are not considered
// (NCCL addresses them by LID).
std::optional<uint32_t> agreedGidIndex(const std::vector<const Port*>& ports,
                                       const GidSelectionPolicy& policy);

} // namespace kube_rdma
