#include "common/node/netns_links.h"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace kube_rdma {
namespace {

// Appends a netlink attribute (type, payload) to `out`, aligned as the kernel writes it.
void addAttribute(std::string& out, uint16_t type, const std::string& payload) {
  rtattr header{};
  header.rta_type = type;
  header.rta_len = static_cast<uint16_t>(RTA_LENGTH(payload.size()));
  out.append(reinterpret_cast<const char*>(&header), sizeof header);
  out += payload;
  out.append(RTA_ALIGN(header.rta_len) - header.rta_len, '\0');
}

// One RTM_NEWLINK message as the kernel sends it in a dump.
std::string linkMessage(const std::string& name, const std::string& kind, unsigned flags) {
  std::string attributes;
  addAttribute(attributes, IFLA_IFNAME, name + std::string(1, '\0'));
  if (!kind.empty()) {
    std::string info;
    addAttribute(info, IFLA_INFO_KIND, kind);
    addAttribute(attributes, IFLA_LINKINFO, info);
  }
  ifinfomsg body{};
  body.ifi_flags = flags;
  nlmsghdr header{};
  header.nlmsg_type = RTM_NEWLINK;
  header.nlmsg_flags = NLM_F_MULTI;
  header.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(sizeof body) + attributes.size());
  std::string out(reinterpret_cast<const char*>(&header), sizeof header);
  out.append(reinterpret_cast<const char*>(&body), sizeof body);
  out += attributes;
  out.append(NLMSG_ALIGN(header.nlmsg_len) - header.nlmsg_len, '\0');
  return out;
}

std::string doneMessage() {
  nlmsghdr header{};
  header.nlmsg_type = NLMSG_DONE;
  header.nlmsg_len = NLMSG_LENGTH(sizeof(int));
  std::string out(reinterpret_cast<const char*>(&header), sizeof header);
  out.append(sizeof(int), '\0');
  return out;
}

TEST(NetnsLinks, ParsesADumpWithKinds) {
  const std::string dump = linkMessage("lo", "", IFF_LOOPBACK | IFF_UP) +
                           linkMessage("eth0", "veth", IFF_UP) +
                           linkMessage("net1", "macvlan", IFF_UP) + doneMessage();
  auto links = parseLinkDump(dump);
  ASSERT_TRUE(links.ok()) << links.error().message;
  EXPECT_EQ(*links, (std::vector<NetnsLink>{
                        {"lo", "", true}, {"eth0", "veth", false}, {"net1", "macvlan", false}}));
  EXPECT_TRUE(mayHoldGids(*links));
}

TEST(NetnsLinks, OnlyLoopbackAndVethHoldNoGid) {
  EXPECT_FALSE(mayHoldGids({{"lo", "", true}, {"eth0", "veth", false}}));
  EXPECT_FALSE(mayHoldGids({{"lo", "", true}}));
  // A netdev moved in whole (a PF or a VF, no link info) holds its port's GIDs.
  EXPECT_TRUE(mayHoldGids({{"lo", "", true}, {"ens1f0np0", "", false}}));
  EXPECT_TRUE(mayHoldGids({{"net1", "ipvlan", false}}));
}

TEST(NetnsLinks, MalformedDumpsAreErrorsThatSaySo) {
  const std::string one = linkMessage("eth0", "veth", 0);
  EXPECT_EQ(parseLinkDump(one).error().message, "the link dump ended without NLMSG_DONE");
  EXPECT_EQ(parseLinkDump(one.substr(0, one.size() - 3)).error().message,
            "a truncated netlink message in the link dump");
  nlmsghdr header{};
  header.nlmsg_type = NLMSG_ERROR;
  header.nlmsg_len = NLMSG_LENGTH(sizeof(nlmsgerr));
  nlmsgerr error{};
  error.error = -EPERM;
  std::string refused(reinterpret_cast<const char*>(&header), sizeof header);
  refused.append(reinterpret_cast<const char*>(&error), sizeof error);
  EXPECT_EQ(parseLinkDump(refused).error().message,
            "the kernel refused the link dump: Operation not permitted");
}

TEST(NetnsLinks, TheKernelsOwnDumpOfThisNamespaceHasLoopback) {
  auto links = listNetnsLinks();
  ASSERT_TRUE(links.ok()) << links.error().message;
  EXPECT_TRUE(std::any_of(links->begin(), links->end(),
                          [](const NetnsLink& l) { return l.loopback && l.name == "lo"; }));
}

} // namespace
} // namespace kube_rdma
