#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "common/pools/plugin_config.h"
#include "webhook/policy.h"

// The JSON that the ConfigMaps of manifests/ and examples/ carry, read by the programs' own
// parsers: a key the schema does not know or a value out of range fails here, not on a cluster
// (where the program would keep its last good config and report the error).
namespace kube_rdma {
namespace {

std::string readSource(const std::string& relative) {
  const std::string path = std::string(KUBE_RDMA_SOURCE_DIR) + "/" + relative;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> poolResources(const PluginConfig& config) {
  std::vector<std::string> names;
  for (const PoolSpec& pool : config.pools) {
    names.push_back(pool.resource_name);
  }
  return names;
}

struct ConfigPair {
  std::string description;
  std::string plugin_config; // path under the source tree
  std::string webhook_policy;
};

// Names the case in test listings (gtest would print the struct's bytes).
void PrintTo(const ConfigPair& pair, std::ostream* os) {
  *os << pair.description;
}

class ShippedConfigTest : public testing::TestWithParam<ConfigPair> {};

TEST_P(ShippedConfigTest, BothParseAndThePolicyCoversEveryPool) {
  const ConfigPair& pair = GetParam();
  const Result<PluginConfig> config = parsePluginConfig(readSource(pair.plugin_config));
  ASSERT_TRUE(config.ok()) << pair.plugin_config << ": " << config.error().message;
  const Result<WebhookPolicy> policy = parseWebhookPolicy(readSource(pair.webhook_policy));
  ASSERT_TRUE(policy.ok()) << pair.webhook_policy << ": " << policy.error().message;

  // A pool whose resource the webhook does not act on would hand out devices to pods that get
  // no IPC_LOCK, /dev/shm or NCCL settings.
  ASSERT_FALSE(config->pools.empty());
  for (const std::string& resource : poolResources(*config)) {
    EXPECT_THAT(policy->resources, testing::Contains(resource))
        << pair.webhook_policy << " does not list the pool " << resource << " of "
        << pair.plugin_config;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ManifestsAndExamples, ShippedConfigTest,
    testing::Values(ConfigPair{"base", "manifests/base/device-plugin/config.json",
                               "manifests/base/webhook/policy.json"},
                    ConfigPair{"nic_per_gpu", "examples/nic-per-gpu/plugin-config.json",
                               "examples/nic-per-gpu/webhook-policy.json"},
                    ConfigPair{"every_port_as_hca", "examples/every-port-as-hca/plugin-config.json",
                               "manifests/base/webhook/policy.json"}),
    [](const testing::TestParamInfo<ConfigPair>& info) { return info.param.description; });

TEST(ShippedConfig, NicPerGpuExampleHasAnExclusivePool) {
  const Result<PluginConfig> config =
      parsePluginConfig(readSource("examples/nic-per-gpu/plugin-config.json"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  bool exclusive = false;
  for (const PoolSpec& pool : config->pools) {
    exclusive = exclusive || pool.mode == PoolMode::kExclusive;
  }
  EXPECT_TRUE(exclusive);
}

} // namespace
} // namespace kube_rdma
