#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/result.h"
#include "common/node/sysfs_attributes.h"

// The IP addresses assigned in one network namespace, read from procfs, which prints them for the
// namespace of the process that reads it (/proc/net is /proc/self/net). The kernel adds every
// address of a RoCE netdev and of its macvlan, ipvlan and VLAN uppers, in any namespace, to the
// port's GID table; these are how a reader tells its own namespace's GIDs from the others'
// (docs/pod-networks.md). Addresses are kept in GID form: IPv4 mapped into ::ffff:0:0/96.
namespace kube_rdma {

// The local IPv4 addresses in /proc/net/fib_trie: each leaf ("|-- 10.0.0.5") that carries a
// "/32 host LOCAL" route. Network, broadcast and prefix routes are not addresses. Both the Main
// and Local tables are printed; an address is listed once.
Result<NamespaceAddresses> parseFibTrieAddresses(std::string_view text);

// The IPv6 addresses in /proc/net/if_inet6: "<32 hex digits> <ifindex> <plen> <scope> <flags>
// <name>" per line.
Result<NamespaceAddresses> parseIfInet6Addresses(std::string_view text);

// Both files under <proc_root>/net, merged. A missing if_inet6 is a kernel without IPv6 and no
// error; a missing fib_trie is. Errors name the file and line.
Result<NamespaceAddresses> readNamespaceAddresses(const std::string& proc_root);

bool containsAddress(const NamespaceAddresses& addresses, const Gid& gid);

} // namespace kube_rdma
