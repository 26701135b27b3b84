#include "common/node/gid_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

GidEntry gid(uint32_t index, const std::string& text, GidType type) {
  return GidEntry{index, text, type, "eth1", ""};
}

const char* kLinkLocal = "fe80:0000:0000:0000:a288:c2ff:fe3b:506a";

// "0000:...:ffff:1910:8002" for 25.16.128.2
std::string mapped(int a, int b, int c, int d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return buf;
}

// The default mlx5 table: link-local v1/v2 at 0/1, the IPv4 address as v1/v2 at 2/3.
Port rocePort(int last_octet) {
  Port p;
  p.number = 1;
  p.state = PortState::kActive;
  p.link_layer = LinkLayer::kEthernet;
  p.gids = {gid(0, kLinkLocal, GidType::kRoceV1), gid(1, kLinkLocal, GidType::kRoceV2),
            gid(2, mapped(25, 11, 128, last_octet), GidType::kRoceV1),
            gid(3, mapped(25, 11, 128, last_octet), GidType::kRoceV2)};
  return p;
}

TEST(SelectGidIndex, PicksTheIpv4RoceV2EntryOfTheDefaultTable) {
  EXPECT_EQ(selectGidIndex(rocePort(2), {}), 3u);
}

TEST(SelectGidIndex, PicksTheLowestQualifyingIndexOfASparseTable) {
  Port p;
  p.link_layer = LinkLayer::kEthernet;
  // Unmapped entries 2/3 (EINVAL types: kUnknown), a container's entries at 4/5, another at 6/7.
  p.gids = {gid(0, kLinkLocal, GidType::kRoceV1),
            gid(1, kLinkLocal, GidType::kRoceV2),
            gid(2, mapped(10, 0, 0, 9), GidType::kUnknown),
            gid(3, mapped(10, 0, 0, 9), GidType::kUnknown),
            gid(7, mapped(10, 0, 1, 7), GidType::kRoceV2),
            gid(4, mapped(10, 0, 1, 5), GidType::kRoceV1),
            gid(5, mapped(10, 0, 1, 5), GidType::kRoceV2)};
  EXPECT_EQ(selectGidIndex(p, {}), 5u);
}

TEST(SelectGidIndex, HonoursFamilyVersionAndRange) {
  Port p = rocePort(34);
  p.gids.push_back(gid(4, "2010:0200:0000:0002:0000:0000:0000:0001", GidType::kRoceV1));
  p.gids.push_back(gid(5, "2010:0200:0000:0002:0000:0000:0000:0001", GidType::kRoceV2));

  GidSelectionPolicy v6;
  v6.family = GidFamily::kIPv6;
  EXPECT_EQ(selectGidIndex(p, v6), 5u); // never the link-local 1

  GidSelectionPolicy v1;
  v1.roce_version = GidType::kRoceV1;
  EXPECT_EQ(selectGidIndex(p, v1), 2u);

  GidSelectionPolicy inside;
  inside.range = *parseCidr("25.11.128.32/27");
  EXPECT_EQ(selectGidIndex(p, inside), 3u);

  GidSelectionPolicy outside;
  outside.range = *parseCidr("25.11.128.0/27");
  EXPECT_EQ(selectGidIndex(p, outside), std::nullopt);

  GidSelectionPolicy v6_range;
  v6_range.family = GidFamily::kIPv6;
  v6_range.range = *parseCidr("2010:200::/32");
  EXPECT_EQ(selectGidIndex(p, v6_range), 5u);
  v6_range.range = *parseCidr("2011::/16");
  EXPECT_EQ(selectGidIndex(p, v6_range), std::nullopt);

  GidSelectionPolicy mismatched; // an IPv6 range never matches IPv4 GIDs
  mismatched.range = *parseCidr("::/0");
  EXPECT_EQ(selectGidIndex(p, mismatched), std::nullopt);
}

TEST(SelectGidIndex, NothingQualifiesOnLinkLocalOnlyOrInfiniBandPorts) {
  Port p = rocePort(2);
  p.gids.resize(2); // only the link-local entries
  EXPECT_EQ(selectGidIndex(p, {}), std::nullopt);
  Port ib = rocePort(2);
  ib.link_layer = LinkLayer::kInfiniBand;
  EXPECT_EQ(selectGidIndex(ib, {}), std::nullopt);
  Port zero;
  zero.link_layer = LinkLayer::kEthernet;
  zero.gids = {gid(3, "0000:0000:0000:0000:0000:0000:0000:0000", GidType::kRoceV2),
               gid(4, "not a gid", GidType::kRoceV2)};
  EXPECT_EQ(selectGidIndex(zero, {}), std::nullopt);
}

// The namespace addresses of `ips` (dotted quads), as GIDs.
NamespaceAddresses addressesOf(const std::vector<std::array<int, 4>>& ips) {
  NamespaceAddresses out;
  for (const auto& ip : ips) {
    out.push_back(*parseGid(mapped(ip[0], ip[1], ip[2], ip[3])));
  }
  std::sort(out.begin(), out.end());
  return out;
}

GidChoice::Outcome outcome(const GidChoice& choice) {
  return choice.outcome;
}

TEST(ChooseGidIndex, IsTheCommonIndexOfTheNamespacesOwnGidsOrSaysWhyNot) {
  const Port a = rocePort(2), b = rocePort(34);
  const NamespaceAddresses host = addressesOf({{25, 11, 128, 2}, {25, 11, 128, 34}});
  EXPECT_EQ(chooseGidIndex({&a, &b}, {}, host).index, 3u);
  EXPECT_EQ(chooseGidIndex({&a, &b}, {}, host).port_indexes,
            (std::vector<std::optional<uint32_t>>{3u, 3u}));

  Port sparse = rocePort(34);
  sparse.gids[2].index = 4;
  sparse.gids[3].index = 5;
  const GidChoice disagree = chooseGidIndex({&a, &sparse}, {}, host);
  EXPECT_EQ(outcome(disagree), GidChoice::Outcome::kPortsDisagree);
  EXPECT_EQ(disagree.index, std::nullopt);
  EXPECT_EQ(disagree.port_indexes, (std::vector<std::optional<uint32_t>>{3u, 5u}));

  // b's address is not this namespace's: no index, and no guess.
  const GidChoice missing = chooseGidIndex({&a, &b}, {}, addressesOf({{25, 11, 128, 2}}));
  EXPECT_EQ(outcome(missing), GidChoice::Outcome::kNoOwnGid);
  EXPECT_EQ(missing.index, std::nullopt);

  Port ib = rocePort(2);
  ib.link_layer = LinkLayer::kInfiniBand;
  EXPECT_EQ(chooseGidIndex({&a, &ib}, {}, host).index, 3u);
  EXPECT_EQ(outcome(chooseGidIndex({&ib}, {}, host)), GidChoice::Outcome::kNoRocePort);
  EXPECT_EQ(outcome(chooseGidIndex({}, {}, host)), GidChoice::Outcome::kNoRocePort);
}

// A PF shared with pods through macvlan, as Linux 6.1 fills its table (docs/pod-networks.md): the
// host's address at 2/3 (when it has one), then each pod's link-local and IPv4 address, every pod
// entry's ndev named "net1".
Port sharedPort(bool host_address) {
  Port p = rocePort(20);
  p.gids.resize(host_address ? 4 : 2);
  uint32_t next = 4;
  for (const int pod : {31, 32}) {
    p.gids.push_back({next, mapped(25, 11, 128, pod), GidType::kRoceV1, "net1", ""});
    p.gids.push_back({next + 1, mapped(25, 11, 128, pod), GidType::kRoceV2, "net1", ""});
    next += 2;
  }
  return p;
}

TEST(ChooseGidIndex, EachNamespaceGetsItsOwnGidNeverAnotherPods) {
  const Port with_host = sharedPort(true);
  const Port without_host = sharedPort(false);
  // NCCL's own rule takes the lowest IPv4 v2 entry of the whole port, whoever holds it.
  EXPECT_EQ(selectGidIndex(with_host, {}), 3u);
  EXPECT_EQ(selectGidIndex(without_host, {}), 5u);
  for (const Port* port : {&with_host, &without_host}) {
    EXPECT_EQ(selectOwnGidIndex(*port, {}, addressesOf({{25, 11, 128, 31}})), 5u);
    EXPECT_EQ(selectOwnGidIndex(*port, {}, addressesOf({{25, 11, 128, 32}})), 7u);
  }
  // The host's rule counts host addresses only: a PF without an address has no GID of the host's,
  // where the old "agreed" rule handed every pod the first pod's index.
  const NamespaceAddresses host = addressesOf({{25, 11, 128, 20}, {10, 0, 60, 3}});
  EXPECT_EQ(selectOwnGidIndex(with_host, {}, host), 3u);
  EXPECT_EQ(selectOwnGidIndex(without_host, {}, host), std::nullopt);
}

// Exclusive mode: the RDMA CNI moved each pod's SR-IOV VF into the pod, so a VF's table holds its
// own MAC's link-local entries and the pod's address, nobody else's. The rule and NCCL's own choice
// agree there, and the host's namespace (where the plugin's view of the VF would be) has no GID
// of its own on it.
TEST(ChooseGidIndex, AVfOfExclusiveModeIsThePodsAlone) {
  const Port vf_a = rocePort(31);
  const Port vf_b = rocePort(32);
  const NamespaceAddresses pod_a = addressesOf({{25, 11, 128, 31}});
  EXPECT_EQ(chooseGidIndex({&vf_a}, {}, pod_a).index, 3u);
  EXPECT_EQ(selectGidIndex(vf_a, {}), 3u);
  // Another pod's VF (which exclusive mode would not even show this pod) is no guess either.
  EXPECT_EQ(outcome(chooseGidIndex({&vf_a, &vf_b}, {}, pod_a)), GidChoice::Outcome::kNoOwnGid);
  EXPECT_EQ(outcome(chooseGidIndex({&vf_a}, {}, addressesOf({{25, 11, 128, 2}}))),
            GidChoice::Outcome::kNoOwnGid);
}

TEST(ChooseGidIndex, AHostileTableGivesTheOwnGidOrNothing) {
  const NamespaceAddresses pod = addressesOf({{25, 11, 128, 40}});
  // A 256-entry table: holes where pods ended, other pods' entries all named net1 (the same name
  // in every pod), the pod's own address in the last slot as v1 and v2 of two slots.
  Port full = rocePort(20);
  for (uint32_t i = 4; i < 254; i += 2) {
    if (i % 6 == 0) {
      continue; // an ended pod's freed slots
    }
    const int other = 41 + static_cast<int>(i % 200);
    full.gids.push_back({i, mapped(25, 11, 128, other), GidType::kRoceV1, "net1", ""});
    full.gids.push_back({i + 1, mapped(25, 11, 128, other), GidType::kRoceV2, "net1", ""});
  }
  full.gids.push_back({254, mapped(25, 11, 128, 40), GidType::kRoceV1, "net1", ""});
  full.gids.push_back({255, mapped(25, 11, 128, 40), GidType::kRoceV2, "net1", ""});
  EXPECT_EQ(selectOwnGidIndex(full, {}, pod), 255u);

  // Its address removed while it runs: the kernel deletes the entries, nothing of the pod's is
  // left, and no other pod's entry is taken in its place.
  Port removed = full;
  removed.gids.resize(removed.gids.size() - 2);
  EXPECT_EQ(selectOwnGidIndex(removed, {}, pod), std::nullopt);
  EXPECT_EQ(outcome(chooseGidIndex({&removed}, {}, pod)), GidChoice::Outcome::kNoOwnGid);

  // A type that could not be read (EINVAL in a container on MLNX_OFED kernels) never qualifies,
  // whoever's the address.
  Port hidden = full;
  hidden.gids.back().type = GidType::kUnknown;
  EXPECT_EQ(selectOwnGidIndex(hidden, {}, pod), std::nullopt);

  // Only the pod's v2 entry of the wanted family, inside the range.
  GidSelectionPolicy outside;
  outside.range = *parseCidr("10.0.0.0/8");
  EXPECT_EQ(selectOwnGidIndex(full, outside, pod), std::nullopt);
}

TEST(ParseCidr, AcceptsOneIpv4OrIpv6Range) {
  auto v4 = parseCidr("10.1.0.0/16");
  ASSERT_TRUE(v4.ok()) << v4.error().message;
  EXPECT_EQ(v4->family, GidFamily::kIPv4);
  EXPECT_EQ(v4->prefix_length, 16u);
  EXPECT_EQ(v4->address[0], 10);
  auto v6 = parseCidr("fd00::/8");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->family, GidFamily::kIPv6);
  EXPECT_TRUE(parseCidr("0.0.0.0/0").ok());
  EXPECT_TRUE(parseCidr("::/128").ok());
}

TEST(ParseCidr, RejectsWhatNcclWouldMisread) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"10.1.0.0", "expected ADDRESS/PREFIX"},
      {"10.1.0.0/16,10.2.0.0/16", "one CIDR only"},
      {"10.1.0/16", "not an IP address"},
      {"10.1.0.0/33", "0..32"},
      {"fd00::/129", "0..128"},
      {"10.1.0.0/", "prefix length"},
      {"10.1.0.0/1x", "prefix length"},
      {"10.1.0.0/-1", "prefix length"},
      {"", "expected ADDRESS/PREFIX"},
  };
  for (const auto& [text, part] : cases) {
    auto r = parseCidr(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  }
}

} // namespace
} // namespace kube_rdma
