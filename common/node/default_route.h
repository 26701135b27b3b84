#pragma once

#include <string>
#include <string_view>

#include "common/util/result.h"

// The management NIC is the netdev that carries the node's default route, read from the kernel's
// /proc/net/route (and /proc/net/ipv6_route when IPv4 has none).
namespace kube_rdma {

// The interface of the IPv4 default route (destination and mask 0, RTF_UP set, not RTF_REJECT)
// with the lowest metric; "" when there is none. /proc/net/route text: a header line, then
// tab-separated "Iface Destination Gateway Flags RefCnt Use Metric Mask ..." with hexadecimal
// addresses and flags.
Result<std::string> parseIpv4DefaultRoute(std::string_view proc_net_route);

// The same for /proc/net/ipv6_route (no header; space-separated "dest plen src plen nexthop metric
// refcnt use flags iface" in hexadecimal). ::/0 through lo with RTF_REJECT is the kernel's
// unreachable placeholder, not a default route.
Result<std::string> parseIpv6DefaultRoute(std::string_view proc_net_ipv6_route);

// Reads <proc_root>/net/route, then <proc_root>/net/ipv6_route when IPv4 has no default route;
// "" when neither has one. Errors name the file that could not be read or parsed.
Result<std::string> findDefaultRouteNetdev(const std::string& proc_root);

} // namespace kube_rdma
