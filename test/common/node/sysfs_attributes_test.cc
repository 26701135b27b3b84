#include "common/node/sysfs_attributes.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(SysfsAttributes, PortStateReadsTheKernelsNumberAndName) {
  EXPECT_EQ(*parsePortState("4: ACTIVE\n"), PortState::kActive);
  EXPECT_EQ(*parsePortState("1: DOWN"), PortState::kDown);
  EXPECT_EQ(*parsePortState("5: ACTIVE_DEFER"), PortState::kActiveDefer);
}

TEST(SysfsAttributes, PortStateRejectsMalformedText) {
  for (const char* bad :
       {"", "ACTIVE", "4:ACTIVE", "x: ACTIVE", "9: ACTIVE", "4: DOWN", "-1: NOP"}) {
    auto r = parsePortState(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("port state"), std::string::npos) << r.error().message;
  }
}

TEST(SysfsAttributes, PhysState) {
  auto up = parsePhysState("5: LinkUp\n");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->code, 5);
  EXPECT_EQ(up->name, "LinkUp");
  EXPECT_EQ(parsePhysState("0: <unknown>")->name, "<unknown>");
  EXPECT_FALSE(parsePhysState("LinkUp").ok());
  EXPECT_FALSE(parsePhysState("5: ").ok());
}

TEST(SysfsAttributes, LinkLayerAcceptsOnlyTheKernelsSpellings) {
  EXPECT_EQ(*parseLinkLayer("InfiniBand\n"), LinkLayer::kInfiniBand);
  EXPECT_EQ(*parseLinkLayer("Ethernet"), LinkLayer::kEthernet);
  EXPECT_EQ(*parseLinkLayer("Unknown"), LinkLayer::kUnknown);
  auto bad = parseLinkLayer("ethernet");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("\"ethernet\""), std::string::npos);
}

TEST(SysfsAttributes, RateInWholeGbps) {
  EXPECT_EQ(*parseRateGbps("200 Gb/sec (4X HDR)\n"), 200u);
  EXPECT_EQ(*parseRateGbps("400 Gb/sec (4X NDR)"), 400u);
  EXPECT_EQ(*parseRateGbps("25 Gb/sec (1X EDR)"), 25u);
  EXPECT_EQ(*parseRateGbps("2.5 Gb/sec (1X SDR)"), 2u);
  for (const char* bad : {"", "fast", "200", "200 Mb/sec (4X HDR)", "-5 Gb/sec (1X)"}) {
    EXPECT_FALSE(parseRateGbps(bad).ok()) << bad;
  }
}

TEST(SysfsAttributes, LidIsHex) {
  EXPECT_EQ(*parseLid("0x0\n"), 0u);
  EXPECT_EQ(*parseLid("0x1a"), 26u);
  for (const char* bad : {"", "26", "0x", "0xzz", "0x10000", "0x1a "}) {
    EXPECT_FALSE(parseLid(bad).ok()) << bad;
  }
}

TEST(SysfsAttributes, NumaNodeMinusOneMeansNone) {
  EXPECT_EQ(*parseNumaNode("1\n"), std::optional<int>(1));
  EXPECT_EQ(*parseNumaNode("-1"), std::nullopt);
  for (const char* bad : {"", "-2", "one", "1 "}) {
    EXPECT_FALSE(parseNumaNode(bad).ok()) << bad;
  }
}

TEST(SysfsAttributes, GidTypes) {
  EXPECT_EQ(*parseGidType("IB/RoCE v1\n"), GidType::kRoceV1);
  EXPECT_EQ(*parseGidType("RoCE v1"), GidType::kRoceV1);
  EXPECT_EQ(*parseGidType("RoCE v2"), GidType::kRoceV2);
  EXPECT_FALSE(parseGidType("RoCE v3").ok());
  EXPECT_FALSE(parseGidType("").ok());
}

TEST(SysfsAttributes, GidIsNormalisedToTheKernelsForm) {
  auto full = parseGid("fe80:0000:0000:0000:a288:c2ff:fe3b:506a\n");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(toKernelText(*full), "fe80:0000:0000:0000:a288:c2ff:fe3b:506a");
  EXPECT_EQ(toKernelText(*parseGid("FE80::A288:C2FF:FE3B:506A")),
            "fe80:0000:0000:0000:a288:c2ff:fe3b:506a");
  EXPECT_EQ(toKernelText(*parseGid("::ffff:10.152.0.12")),
            "0000:0000:0000:0000:0000:ffff:0a98:000c");
  for (const char* bad : {"", "fe80", "fe80:::1", "0000:0000:0000:0000:0000:0000:0000:0000:0000",
                          "zz80::1", "10.1.1.1"}) {
    auto r = parseGid(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(SysfsAttributes, GidPredicates) {
  const Gid zero = *parseGid("0000:0000:0000:0000:0000:0000:0000:0000");
  const Gid ll = *parseGid("fe80:0000:0000:0000:bace:f6ff:fe00:0101");
  const Gid v4 = *parseGid("0000:0000:0000:0000:0000:ffff:190b:8002");
  const Gid v6 = *parseGid("2001:0db8:0000:0000:0000:0000:0000:0001");
  EXPECT_TRUE(isZero(zero));
  EXPECT_FALSE(isZero(ll));
  EXPECT_TRUE(isLinkLocal(ll));
  EXPECT_FALSE(isLinkLocal(v4));
  EXPECT_FALSE(isLinkLocal(*parseGid("fe80:0000:0000:0001::1")));
  EXPECT_EQ(ipv4Of(v4), std::optional<std::string>("25.11.128.2"));
  EXPECT_EQ(ipv4Of(v6), std::nullopt);
  EXPECT_EQ(ipv4Of(ll), std::nullopt);
  EXPECT_EQ(ipv4Of(*parseGid("::fffe:1.2.3.4")), std::nullopt);
}

class ReadAttributeTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("attr-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ReadAttributeTest, StripsOneNewline) {
  std::ofstream(dir_ / "state") << "4: ACTIVE\n";
  EXPECT_EQ(*readAttribute((dir_ / "state").string()), "4: ACTIVE");
}

TEST_F(ReadAttributeTest, AReadErrorNamesThePath) {
  // Fixtures emulate the kernel's EINVAL with a directory: open works, read fails.
  std::filesystem::create_directories(dir_ / "types" / "7");
  auto r = readAttribute((dir_ / "types" / "7").string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("types/7"), std::string::npos) << r.error().message;
  auto missing = readAttribute((dir_ / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("absent"), std::string::npos);
}

TEST_F(ReadAttributeTest, RefusesOversizedFiles) {
  std::ofstream(dir_ / "big") << std::string(kMaxAttributeBytes + 1, 'x');
  EXPECT_FALSE(readAttribute((dir_ / "big").string()).ok());
  EXPECT_TRUE(readAttribute((dir_ / "big").string(), 2 * kMaxAttributeBytes).ok());
}

} // namespace
} // namespace kube_rdma
