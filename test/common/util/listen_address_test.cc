#include "common/util/listen_address.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(ParseListenAddress, HostPortForms) {
  auto v4 = parseListenAddress("127.0.0.1:9400");
  ASSERT_TRUE(v4.ok()) << v4.error().message;
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 9400);
  auto any = parseListenAddress(":0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 0);
  auto v6 = parseListenAddress("[::1]:65535");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 65535);
}

TEST(ParseListenAddress, ErrorsQuoteTheTextAndSayWhatIsWrong) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {"9400", "has no port"},
      {"host:", "the port must be"},
      {"host:65536", "the port must be"},
      {"host:-1", "the port must be"},
      {"host:94x0", "the port must be"},
      {":+1", "the port must be"},
      {"::1:8443", "IPv6 hosts in brackets"},
  };
  for (const auto& c : cases) {
    auto parsed = parseListenAddress(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_NE(parsed.error().message.find("\"" + std::string(c.text) + "\""), std::string::npos)
        << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(c.says), std::string::npos) << parsed.error().message;
  }
}

} // namespace
} // namespace kube_rdma
