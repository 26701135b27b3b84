#include "common/node/gid_selection.h"

#include <arpa/inet.h>

#include "common/node/namespace_addresses.h"
#include "common/util/strings.h"
#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

bool inRange(const Gid& gid, const Cidr& cidr) {
  // An IPv4 range is compared with the address inside an IPv4-mapped GID (the last 4 bytes).
  const size_t offset = cidr.family == GidFamily::kIPv4 ? 12 : 0;
  uint32_t bits = cidr.prefix_length;
  for (size_t i = 0; bits > 0; ++i) {
    const uint32_t take = bits >= 8 ? 8 : bits;
    const uint8_t mask = static_cast<uint8_t>(0xff00 >> take);
    if ((gid.bytes[offset + i] & mask) != (cidr.address[i] & mask)) {
      return false;
    }
    bits -= take;
  }
  return true;
}

} // namespace

Result<Cidr> parseCidr(std::string_view text) {
  const std::string shown = quoted(text);
  if (text.find(',') != std::string_view::npos) {
    return makeError("address range " + shown + ": one CIDR only (NCCL reads only the first)");
  }
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return makeError("address range " + shown + ": expected ADDRESS/PREFIX, e.g. 10.1.0.0/16");
  }
  Cidr out;
  const std::string address(text.substr(0, slash));
  out.family = address.find(':') != std::string::npos ? GidFamily::kIPv6 : GidFamily::kIPv4;
  const int af = out.family == GidFamily::kIPv6 ? AF_INET6 : AF_INET;
  if (inet_pton(af, address.c_str(), out.address.data()) != 1) {
    return makeError("address range " + shown + ": \"" + address + "\" is not an IP address");
  }
  const std::string_view length = text.substr(slash + 1);
  const uint32_t max_length = out.family == GidFamily::kIPv6 ? 128 : 32;
  const auto prefix_length = parseWhole<uint32_t>(length);
  if (!prefix_length || *prefix_length > max_length) {
    return makeError("address range " + shown + ": prefix length must be 0.." +
                     std::to_string(max_length));
  }
  out.prefix_length = *prefix_length;
  return out;
}

std::string cidrText(const Cidr& cidr) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(cidr.family == GidFamily::kIPv6 ? AF_INET6 : AF_INET, cidr.address.data(), text,
            sizeof text);
  return std::string(text) + "/" + std::to_string(cidr.prefix_length);
}

bool gidQualifies(const GidEntry& entry, const GidSelectionPolicy& policy) {
  if (entry.type != policy.roce_version) {
    return false;
  }
  auto gid = parseGid(entry.gid);
  if (!gid.ok() || isZero(*gid) || isLinkLocal(*gid)) {
    return false;
  }
  const GidFamily family = ipv4Of(*gid) ? GidFamily::kIPv4 : GidFamily::kIPv6;
  if (family != policy.family) {
    return false;
  }
  return !policy.range || (policy.range->family == family && inRange(*gid, *policy.range));
}

std::optional<uint32_t> selectGidIndex(const Port& port, const GidSelectionPolicy& policy) {
  if (port.link_layer != LinkLayer::kEthernet) {
    return std::nullopt;
  }
  std::optional<uint32_t> best;
  for (const auto& entry : port.gids) {
    if ((!best || entry.index < *best) && gidQualifies(entry, policy)) {
      best = entry.index;
    }
  }
  return best;
}

bool gidInNamespace(const GidEntry& entry, const NamespaceAddresses& addresses) {
  auto gid = parseGid(entry.gid);
  return gid.ok() && containsAddress(addresses, *gid);
}

std::optional<uint32_t> selectOwnGidIndex(const Port& port, const GidSelectionPolicy& policy,
                                          const NamespaceAddresses& addresses) {
  if (port.link_layer != LinkLayer::kEthernet) {
    return std::nullopt;
  }
  std::optional<uint32_t> best;
  for (const auto& entry : port.gids) {
    if ((!best || entry.index < *best) && gidQualifies(entry, policy) &&
        gidInNamespace(entry, addresses)) {
      best = entry.index;
    }
  }
  return best;
}

GidChoice chooseGidIndex(const std::vector<const Port*>& ports, const GidSelectionPolicy& policy,
                         const NamespaceAddresses& addresses) {
  GidChoice choice;
  std::optional<uint32_t> first;
  bool disagree = false;
  bool missing = false;
  for (const Port* port : ports) {
    const auto index = selectOwnGidIndex(*port, policy, addresses);
    choice.port_indexes.push_back(index);
    if (port->link_layer != LinkLayer::kEthernet) {
      continue;
    }
    missing = missing || !index;
    if (index && first && *first != *index) {
      disagree = true;
    }
    first = first ? first : index;
    if (choice.outcome == GidChoice::Outcome::kNoRocePort) {
      choice.outcome = GidChoice::Outcome::kAgreed;
    }
  }
  if (choice.outcome == GidChoice::Outcome::kNoRocePort) {
    return choice;
  }
  if (missing) {
    choice.outcome = GidChoice::Outcome::kNoOwnGid;
  } else if (disagree) {
    choice.outcome = GidChoice::Outcome::kPortsDisagree;
  } else {
    choice.index = first;
  }
  return choice;
}

std::string toString(GidChoice::Outcome outcome) {
  switch (outcome) {
  case GidChoice::Outcome::kAgreed:
    return "agreed";
  case GidChoice::Outcome::kPortsDisagree:
    return "ports-disagree";
  case GidChoice::Outcome::kNoOwnGid:
    return "no-own-gid";
  case GidChoice::Outcome::kNoRocePort:
    break;
  }
  return "no-roce-port";
}

} // namespace kube_rdma
