#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/util/result.h"

// The network interfaces of the caller's network namespace and their kinds, from the kernel's
// rtnetlink (RTM_GETLINK). kube-rdma-nccl-hook asks it first: a namespace whose interfaces are
// only loopback and veth (a pod on the cluster network alone) can hold no RoCE GID, since the
// kernel adds GIDs only for the RDMA port's netdev and its macvlan, ipvlan, VLAN and bond uppers
// (docs/pod-networks.md). Reading every GID table to learn that costs far more.
namespace kube_rdma {

struct NetnsLink {
  std::string name;
  std::string kind; // IFLA_INFO_KIND: "veth", "macvlan", "ipvlan", "vlan"...; "" for a device
                    // with no link info (a physical netdev or VF moved in, loopback)
  bool loopback = false;
  bool operator==(const NetnsLink&) const = default;
};

// The links of an RTM_GETLINK dump: the bytes of its netlink messages, as recv() returned them
// (several messages per buffer, several buffers concatenated). Errors name what is malformed or
// the kernel's NLMSG_ERROR.
Result<std::vector<NetnsLink>> parseLinkDump(std::string_view messages);

// Dumps the caller's namespace's links over a NETLINK_ROUTE socket.
Result<std::vector<NetnsLink>> listNetnsLinks();

// False when every link is loopback or veth: no address of the namespace can be a GID.
bool mayHoldGids(const std::vector<NetnsLink>& links);

} // namespace kube_rdma
