#include "common/node/default_route.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

constexpr const char* kHeader =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT   \n";

TEST(DefaultRoute, PicksTheIpv4DefaultRouteWithTheLowestMetric) {
  const std::string text = std::string(kHeader) +
                           "eth1\t00800B19\t00000000\t0001\t0\t0\t0\tE0FFFFFF\t0\t0\t0\n"
                           "eth2\t00000000\t01800B19\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
                           "eth0\t00000000\t013C000A\t0003\t0\t0\t100\t00000000\t0\t0\t0   \n";
  EXPECT_EQ(*parseIpv4DefaultRoute(text), "eth0");
}

TEST(DefaultRoute, IgnoresRoutesThatAreDownOrRejectOrNotDefault) {
  const std::string text = std::string(kHeader) +
                           "eth1\t00000000\t01800B19\t0002\t0\t0\t0\t00000000\t0\t0\t0\n"
                           "eth2\t00000000\t00000000\t0201\t0\t0\t0\t00000000\t0\t0\t0\n"
                           "eth3\t00000000\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n";
  EXPECT_EQ(*parseIpv4DefaultRoute(text), "");
  EXPECT_EQ(*parseIpv4DefaultRoute(kHeader), "");
}

TEST(DefaultRoute, MalformedIpv4LinesAreErrorsWithTheLineNumber) {
  auto short_line = parseIpv4DefaultRoute(std::string(kHeader) + "eth0\t00000000\n");
  ASSERT_FALSE(short_line.ok());
  EXPECT_NE(short_line.error().message.find("line 2"), std::string::npos);
  auto bad_hex = parseIpv4DefaultRoute(std::string(kHeader) +
                                       "eth0\tXYZ\t013C000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
  ASSERT_FALSE(bad_hex.ok());
  EXPECT_NE(bad_hex.error().message.find("hexadecimal"), std::string::npos);
}

TEST(DefaultRoute, Ipv6DefaultRouteSkipsLoopbacksRejectRoute) {
  const std::string zeros(32, '0');
  const std::string text =
      zeros + " 00 " + zeros + " 00 " + zeros + " ffffffff 00000001 00000000 00200200       lo\n" +
      "fe800000000000000000000000000000 40 " + zeros + " 00 " + zeros +
      " 00000100 00000001 00000000 00000001     eth3\n" + zeros + " 00 " + zeros +
      " 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth2\n";
  EXPECT_EQ(*parseIpv6DefaultRoute(text), "eth2");
  EXPECT_EQ(*parseIpv6DefaultRoute(""), "");
  EXPECT_FALSE(parseIpv6DefaultRoute("0000 00 eth0\n").ok());
}

TEST(DefaultRoute, FindsTheManagementNetdevOfTheA100Fixture) {
  EXPECT_EQ(*findDefaultRouteNetdev(std::string(KUBE_RDMA_FIXTURES) + "/a100-roce/proc"), "eth0");
  EXPECT_EQ(*findDefaultRouteNetdev(std::string(KUBE_RDMA_FIXTURES) + "/renamed-rocep/proc"),
            "eno1");
}

TEST(DefaultRoute, FallsBackToIpv6AndReportsUnreadableFiles) {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / ("route-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "net");
  std::ofstream(dir / "net" / "route") << kHeader;
  std::ofstream(dir / "net" / "ipv6_route")
      << std::string(32, '0') << " 00 " << std::string(32, '0') << " 00 " << std::string(32, '0')
      << " 00000400 00000001 00000000 00000003     bond0\n";
  EXPECT_EQ(*findDefaultRouteNetdev(dir.string()), "bond0");
  std::filesystem::remove(dir / "net" / "ipv6_route");
  auto missing = findDefaultRouteNetdev(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("ipv6_route"), std::string::npos);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace kube_rdma
