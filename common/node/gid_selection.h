#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/result.h"

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
// The inverse: "10.1.0.0/16", "fd00::/8".
std::string cidrText(const Cidr& cidr);

struct GidSelectionPolicy {
  GidFamily family = GidFamily::kIPv4;
  GidType roce_version = GidType::kRoceV2;
  std::optional<Cidr> range;
  bool operator==(const GidSelectionPolicy&) const = default;
};

// Whether NCCL's rule would take this entry of a RoCE port's table (the lowest-index one that
// qualifies is the one it picks).
bool gidQualifies(const GidEntry& entry, const GidSelectionPolicy& policy);

// The GID index NCCL picks on this port by itself, or nullopt when nothing qualifies (NCCL then
// falls back to index 0, the link-local RoCE v1 GID) or the port is not a RoCE (Ethernet) port.
// NCCL looks at no namespace: on a port shared with pods this can be another pod's GID.
std::optional<uint32_t> selectGidIndex(const Port& port, const GidSelectionPolicy& policy);

// Whether the entry's GID is an address of the namespace whose `addresses` are given.
bool gidInNamespace(const GidEntry& entry, const NamespaceAddresses& addresses);

// NCCL's rule restricted to one network namespace: the lowest-index entry that qualifies and whose
// address is assigned in that namespace. The kernel puts the addresses of every namespace's
// macvlan, ipvlan and VLAN uppers of the port's netdev into one table, so the entry NCCL would
// pick by itself can belong to another pod (docs/pod-networks.md).
std::optional<uint32_t> selectOwnGidIndex(const Port& port, const GidSelectionPolicy& policy,
                                          const NamespaceAddresses& addresses);

// The one NCCL_IB_GID_INDEX for a set of ports (NCCL takes one value for all of them).
struct GidChoice {
  enum class Outcome {
    kNoRocePort,    // only InfiniBand ports (NCCL addresses them by LID), or none
    kAgreed,        // every RoCE port's own GID has the same index
    kPortsDisagree, // every RoCE port has an own GID, at different indexes: no one value fits
    kNoOwnGid,      // a RoCE port has no GID of this namespace (a veth-only pod, or no address)
  };
  Outcome outcome = Outcome::kNoRocePort;
  std::optional<uint32_t> index;                     // kAgreed only
  std::vector<std::optional<uint32_t>> port_indexes; // each given port's own index, in order
  bool operator==(const GidChoice&) const = default;
};
GidChoice chooseGidIndex(const std::vector<const Port*>& ports, const GidSelectionPolicy& policy,
                         const NamespaceAddresses& addresses);

// "agreed", "ports-disagree", "no-own-gid", "no-roce-port": for logs and metrics.
std::string toString(GidChoice::Outcome outcome);

} // namespace kube_rdma
