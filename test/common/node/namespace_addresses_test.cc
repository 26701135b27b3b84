#include "common/node/namespace_addresses.h"

#include <gtest/gtest.h>

#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

std::string text(const Gid& gid) {
  return ipv4Of(gid).value_or(toKernelText(gid));
}

std::vector<std::string> texts(const NamespaceAddresses& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(text(a));
  }
  return out;
}

// As Linux 6.1 printed it in a network namespace with lo, a /24 on eth0 and a secondary /32.
constexpr const char* kFibTrie = R"(Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
           |-- 192.0.2.3
              /32 link UNICAST
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.2
              /32 host LOCAL
)";

TEST(NamespaceAddresses, FibTrieLocalHostRoutesAreTheAddresses) {
  auto addresses = parseFibTrieAddresses(kFibTrie);
  ASSERT_TRUE(addresses.ok()) << addresses.error().message;
  // Not the network (127.0.0.0/8 host LOCAL is the loopback route), not broadcast, each once.
  EXPECT_EQ(texts(*addresses), (std::vector<std::string>{"127.0.0.1", "192.0.2.2", "192.0.2.3"}));
  EXPECT_TRUE(containsAddress(*addresses, *parseGid("::ffff:192.0.2.3")));
  EXPECT_FALSE(containsAddress(*addresses, *parseGid("::ffff:192.0.2.255")));
}

TEST(NamespaceAddresses, IfInet6ListsEveryIpv6Address) {
  auto addresses = parseIfInet6Addresses("fd000000000000000000000000000002 04 40 00 82     eth0\n"
                                         "00000000000000000000000000000001 01 80 10 80       lo\n"
                                         "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n");
  ASSERT_TRUE(addresses.ok()) << addresses.error().message;
  EXPECT_EQ(texts(*addresses),
            (std::vector<std::string>{"0000:0000:0000:0000:0000:0000:0000:0001",
                                      "fd00:0000:0000:0000:0000:0000:0000:0002",
                                      "fe80:0000:0000:0000:00fc:00ff:fe00:0001"}));
}

TEST(NamespaceAddresses, BadLinesAreNamed) {
  auto bad_leaf = parseFibTrieAddresses("Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.0.0.x\n");
  ASSERT_FALSE(bad_leaf.ok());
  EXPECT_EQ(bad_leaf.error().message, "fib_trie line 3: \"10.0.0.x\" is not an IPv4 address");
  auto bad_hex = parseIfInet6Addresses("fe80::1 04 40 20 80 eth0\n");
  ASSERT_FALSE(bad_hex.ok());
  EXPECT_EQ(bad_hex.error().message, "if_inet6 line 1: \"fe80::1\" is not 32 hexadecimal digits");
  auto missing = readNamespaceAddresses("/nonexistent-proc");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent-proc/net/fib_trie"), std::string::npos);
}

TEST(NamespaceAddresses, APodsNamespaceOfTheFixture) {
  const std::string pod = std::string(KUBE_RDMA_FIXTURES) + "/roce-pod-network/pods/podA/proc";
  auto addresses = readNamespaceAddresses(pod);
  ASSERT_TRUE(addresses.ok()) << addresses.error().message;
  EXPECT_EQ(texts(*addresses),
            (std::vector<std::string>{"0000:0000:0000:0000:0000:0000:0000:0001", "127.0.0.1",
                                      "198.51.100.31", "198.51.101.31", "198.51.102.31",
                                      "fe80:0000:0000:0000:0cc0:a1ff:fe00:00a1"}));
}

} // namespace
} // namespace kube_rdma
