// ApiClaimReader against the API-server simulator over real TLS.
#include "dra/api_claim_reader.h"

#include <gtest/gtest.h>

#include "test/dra/dra_test_support.h"
#include "test/apiserver/simulated_api.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

class ApiClaimReaderTest : public testing::Test {
protected:
  void SetUp() override { ASSERT_EQ(api_.start(), ""); }
  SimulatedApi api_;
};

TEST_F(ApiClaimReaderTest, ReadsTheClaimAsTheApiServerHasIt) {
  const json stored =
      api_.simulator().put("resourceclaims", json::parse(readTestData("claim-two-nics.json")));
  ApiClaimReader reader(api_.api());
  Result<json> claim = reader.getResourceClaim("ml", "train-0-rdma-x7k2p");
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(*claim, stored);
}

TEST_F(ApiClaimReaderTest, PassesOnTheApiServersMessage) {
  ApiClaimReader reader(api_.api());
  Result<json> missing = reader.getResourceClaim("ml", "no-such-claim");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("\"no-such-claim\" not found"), std::string::npos)
      << missing.error().message;
}

TEST_F(ApiClaimReaderTest, RefusesAnEmptyNamespaceBeforeAsking) {
  ApiClaimReader reader(api_.api());
  const size_t before = api_.simulator().requestCount();
  Result<json> claim = reader.getResourceClaim("", "x");
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(api_.simulator().requestCount(), before);
  // The same reader does reach the server. (The simulator's stop can hang when it never got a
  // request: seen in the GCC build.)
  EXPECT_FALSE(reader.getResourceClaim("ml", "x").ok());
  EXPECT_EQ(api_.simulator().requestCount(), before + 1);
}

} // namespace
} // namespace kube_rdma
