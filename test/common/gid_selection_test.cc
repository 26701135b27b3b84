#include "common/gid_selection.h"

#include <gtest/gtest.h>

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

TEST(AgreedGidIndex, IsTheCommonIndexOrNothing) {
  const Port a = rocePort(2), b = rocePort(34);
  EXPECT_EQ(agreedGidIndex({&a, &b}, {}), 3u);

  Port sparse = rocePort(66);
  sparse.gids[2].index = 4;
  sparse.gids[3].index = 5;
  EXPECT_EQ(agreedGidIndex({&a, &sparse}, {}), std::nullopt);

  Port none = rocePort(98);
  none.gids.resize(2);
  EXPECT_EQ(agreedGidIndex({&a, &none}, {}), std::nullopt);

  Port ib = rocePort(2);
  ib.link_layer = LinkLayer::kInfiniBand;
  EXPECT_EQ(agreedGidIndex({&a, &ib}, {}), 3u);
  EXPECT_EQ(agreedGidIndex({&ib}, {}), std::nullopt);
  EXPECT_EQ(agreedGidIndex({}, {}), std::nullopt);
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
