#include "common/pools/plugin_config.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

Result<PluginConfig> parse(const std::string& text) {
  return parsePluginConfig(text);
}

TEST(DefaultPluginConfig, IsInfiniBandAndRoceSharedPools) {
  const PluginConfig c = defaultPluginConfig();
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].resource_name, "rdma/hca");
  EXPECT_EQ(c.pools[0].selector.link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(c.pools[1].resource_name, "rdma/shared");
  EXPECT_EQ(c.pools[1].selector.link_layer, LinkLayer::kEthernet);
  for (const auto& p : c.pools) {
    EXPECT_EQ(p.mode, PoolMode::kShared);
    EXPECT_FALSE(p.shared_count.has_value());
    EXPECT_FALSE(p.selector.include_management);
    EXPECT_FALSE(p.selector.include_vfs);
    EXPECT_EQ(p.nccl.gid_index_mode, GidIndexMode::kAgreed);
    EXPECT_TRUE(p.nccl.nccl_conf_enabled);
    EXPECT_EQ(p.nccl.nccl_conf_path, "/etc/nccl.conf");
  }
  EXPECT_EQ(c.resend_interval_seconds, 30u);
}

TEST(ParsePluginConfig, EmptyObjectAndPoolsLeftOutGiveTheDefaults) {
  auto c = parse("{}");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(*c, defaultPluginConfig());
  EXPECT_EQ(c->unused_rdma_after_seconds, 900u);
  auto tuned =
      parse(R"({"resendIntervalSeconds": 5, "healthPollMs": 200, "unusedRdmaAfterSeconds": 0})");
  ASSERT_TRUE(tuned.ok()) << tuned.error().message;
  EXPECT_EQ(tuned->pools, defaultPluginConfig().pools);
  EXPECT_EQ(tuned->resend_interval_seconds, 5u);
  EXPECT_EQ(tuned->health_poll_ms, 200u);
  EXPECT_EQ(tuned->unused_rdma_after_seconds, 0u);
}

TEST(ParsePluginConfig, ReadsEveryKey) {
  auto c = parse(R"({
    "version": "v1",
    "pools": [
      {"resourceName": "example.com/rail",
       "selector": {"linkLayer": "Ethernet", "deviceNames": ["mlx5_*"], "netdevNames": ["eth?"],
                    "vendors": ["0x15B3"], "deviceIDs": ["0x101b"], "drivers": ["mlx5_core"],
                    "pciAddresses": ["0000:3B:00.0"], "exclude": ["mlx5_0"],
                    "includeManagement": true, "includeVFs": true},
       "mode": "shared", "sharedCount": 8,
       "nccl": {"gidIndex": "agreed", "addrFamily": "AF_INET", "addrRange": "25.11.128.0/24",
                "ncclConf": {"enabled": false, "containerPath": "/opt/nccl/nccl.conf"},
                "env": {"NCCL_IB_TIMEOUT": "22", "NCCL_IB_QPS_PER_CONNECTION": "8"}}},
      {"resourceName": "rdma/exclusive", "mode": "exclusive", "nccl": {"gidIndex": 3}}
    ]})");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->pools.size(), 2u);
  const PoolSpec& p = c->pools[0];
  EXPECT_EQ(p.resource_name, "example.com/rail");
  EXPECT_EQ(p.selector.link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(p.selector.device_names, (std::vector<std::string>{"mlx5_*"}));
  EXPECT_EQ(p.selector.netdev_names, (std::vector<std::string>{"eth?"}));
  EXPECT_EQ(p.selector.vendors, (std::vector<std::string>{"0x15b3"}));
  EXPECT_EQ(p.selector.device_ids, (std::vector<std::string>{"0x101b"}));
  EXPECT_EQ(p.selector.drivers, (std::vector<std::string>{"mlx5_core"}));
  EXPECT_EQ(p.selector.pci_addresses, (std::vector<std::string>{"0000:3b:00.0"}));
  EXPECT_EQ(p.selector.exclude, (std::vector<std::string>{"mlx5_0"}));
  EXPECT_TRUE(p.selector.include_management);
  EXPECT_TRUE(p.selector.include_vfs);
  EXPECT_EQ(p.shared_count, 8u);
  EXPECT_EQ(p.nccl.gid_index_mode, GidIndexMode::kAgreed);
  ASSERT_TRUE(p.nccl.gid_policy.range.has_value());
  EXPECT_EQ(p.nccl.gid_policy.range->prefix_length, 24u);
  EXPECT_FALSE(p.nccl.nccl_conf_enabled);
  EXPECT_EQ(p.nccl.nccl_conf_path, "/opt/nccl/nccl.conf");
  EXPECT_EQ(p.nccl.env, (NcclEnv{{"NCCL_IB_QPS_PER_CONNECTION", "8"}, {"NCCL_IB_TIMEOUT", "22"}}));
  const PoolSpec& x = c->pools[1];
  EXPECT_EQ(x.mode, PoolMode::kExclusive);
  EXPECT_EQ(x.nccl.gid_index_mode, GidIndexMode::kFixed);
  EXPECT_EQ(x.nccl.gid_index, 3u);
  EXPECT_FALSE(x.selector.link_layer.has_value());
}

TEST(ParsePluginConfig, MemlockDefaultsToUnlimitedWithTheHookUnderVarLibKubeRdma) {
  const MemlockHookConfig m = defaultPluginConfig().memlock;
  EXPECT_EQ(m.limit.mode, MemlockLimit::Mode::kUnlimited);
  EXPECT_EQ(m.hook_path, "/var/lib/kube-rdma/bin/kube-rdma-memlock-hook");
  EXPECT_EQ(m.log_file, "/var/lib/kube-rdma/memlock-hook.log");
}

TEST(ParsePluginConfig, MemlockTakesOffABytesCountAndOtherPaths) {
  auto off = parse(R"({"memlock": "off"})");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->memlock.limit.mode, MemlockLimit::Mode::kOff);
  auto bytes = parse(R"({"memlock": 68719476736, "memlockHookPath": "/opt/krdma/hook",
                         "memlockLogFile": "/var/log/krdma-hook.log"})");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  EXPECT_EQ(bytes->memlock.limit, (MemlockLimit{MemlockLimit::Mode::kBytes, 68719476736}));
  EXPECT_EQ(bytes->memlock.hook_path, "/opt/krdma/hook");
  EXPECT_EQ(bytes->memlock.log_file, "/var/log/krdma-hook.log");
}

struct BadCase {
  std::string description;
  std::string document;
  std::string expected;
};

class PluginConfigBad : public testing::TestWithParam<BadCase> {};

TEST_P(PluginConfigBad, IsRejectedWithTheJsonPath) {
  const auto& c = GetParam();
  auto got = parse(c.document);
  ASSERT_FALSE(got.ok()) << "accepted: " << c.document;
  EXPECT_NE(got.error().message.find(c.expected), std::string::npos) << got.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, PluginConfigBad,
    testing::Values(
        BadCase{
            "link_layer", R"({"pools":[{"resourceName":"a.io/x"},
                {"resourceName":"rdma/y","selector":{"linkLayer":"ib"}}]})",
            R"($.pools[1].selector.linkLayer: expected one of "InfiniBand", "Ethernet", got "ib")"},
        BadCase{"unknown_pool_key", R"({"pools":[{"resourceName":"rdma/x","sharedcount":2}]})",
                "$.pools[0].sharedcount: unknown key"},
        BadCase{"unknown_selector_key",
                R"({"pools":[{"resourceName":"rdma/x","selector":{"names":["a"]}}]})",
                "$.pools[0].selector.names: unknown key"},
        BadCase{"unknown_root_key", R"({"resendInterval":3})", "$.resendInterval: unknown key"},
        BadCase{"missing_resource", R"({"pools":[{}]})",
                "$.pools[0].resourceName: required key is missing"},
        BadCase{"empty_resource", R"({"pools":[{"resourceName":""}]})",
                "$.pools[0].resourceName: \"\" must be one \"domain/name\""},
        BadCase{"no_domain", R"({"pools":[{"resourceName":"hca"}]})",
                "$.pools[0].resourceName: \"hca\" must be one \"domain/name\""},
        BadCase{"upper_domain", R"({"pools":[{"resourceName":"RDMA/hca"}]})",
                "$.pools[0].resourceName: \"RDMA/hca\": domain \"RDMA\""},
        BadCase{"native_domain", R"({"pools":[{"resourceName":"kubernetes.io/hca"}]})",
                "reserved for native resources"},
        BadCase{"bad_name", R"({"pools":[{"resourceName":"rdma/-hca"}]})", "name \"-hca\""},
        BadCase{"duplicate", R"({"pools":[{"resourceName":"rdma/a"},{"resourceName":"rdma/b"},
                {"resourceName":"rdma/a"}]})",
                "$.pools[2].resourceName: \"rdma/a\" is already used by $.pools[0]"},
        BadCase{"empty_pools", R"({"pools":[]})", "$.pools: at least one pool"},
        BadCase{"mode", R"({"pools":[{"resourceName":"rdma/a","mode":"Shared"}]})",
                R"($.pools[0].mode: expected one of "shared", "exclusive", got "Shared")"},
        BadCase{"shared_count_zero", R"({"pools":[{"resourceName":"rdma/a","sharedCount":0}]})",
                "$.pools[0].sharedCount: expected \"auto\" or an integer from 1 to 1024, got 0"},
        BadCase{"shared_count_word",
                R"({"pools":[{"resourceName":"rdma/a","sharedCount":"many"}]})",
                "$.pools[0].sharedCount: expected \"auto\""},
        BadCase{"shared_count_fraction",
                R"({"pools":[{"resourceName":"rdma/a","sharedCount":1.5}]})", "got 1.5"},
        BadCase{"shared_count_exclusive",
                R"({"pools":[{"resourceName":"rdma/a","mode":"exclusive","sharedCount":4}]})",
                "$.pools[0].sharedCount: applies only to shared pools"},
        BadCase{"vendor",
                R"({"pools":[{"resourceName":"rdma/a","selector":{"vendors":["15b3"]}}]})",
                "$.pools[0].selector.vendors[0]: expected a PCI vendor ID"},
        BadCase{"pci", R"({"pools":[{"resourceName":"rdma/a",
                "selector":{"pciAddresses":["0000:3b:00.0","3b:00.0"]}}]})",
                "$.pools[0].selector.pciAddresses[1]: expected a PCI address"},
        BadCase{"empty_glob",
                R"({"pools":[{"resourceName":"rdma/a","selector":{"exclude":[""]}}]})",
                "$.pools[0].selector.exclude[0]"},
        BadCase{"management_type",
                R"({"pools":[{"resourceName":"rdma/a","selector":{"includeManagement":"yes"}}]})",
                "$.pools[0].selector.includeManagement: expected true or false"},
        BadCase{"gid_word", R"({"pools":[{"resourceName":"rdma/a","nccl":{"gidIndex":"auto"}}]})",
                R"($.pools[0].nccl.gidIndex: expected "unset", "agreed" or an integer)"},
        BadCase{"gid_negative", R"({"pools":[{"resourceName":"rdma/a","nccl":{"gidIndex":-1}}]})",
                "$.pools[0].nccl.gidIndex"},
        BadCase{"addr_range",
                R"({"pools":[{"resourceName":"rdma/a","nccl":{"addrRange":"10.0.0.0"}}]})",
                "$.pools[0].nccl.addrRange: address range \"10.0.0.0\": expected ADDRESS/PREFIX"},
        BadCase{"addr_family_mismatch", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"addrFamily":"AF_INET6","addrRange":"10.0.0.0/8"}}]})",
                "$.pools[0].nccl.addrRange: \"10.0.0.0/8\" is not in addrFamily AF_INET6"},
        BadCase{"conf_path", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"ncclConf":{"containerPath":"etc/nccl.conf"}}}]})",
                "$.pools[0].nccl.ncclConf.containerPath: must be an absolute file path"},
        BadCase{"conf_path_dotdot", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"ncclConf":{"containerPath":"/etc/../root/x"}}}]})",
                "$.pools[0].nccl.ncclConf.containerPath: must not contain"},
        BadCase{"conf_unknown", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"ncclConf":{"path":"/x"}}}]})",
                "$.pools[0].nccl.ncclConf.path: unknown key"},
        BadCase{"env_name",
                R"({"pools":[{"resourceName":"rdma/a","nccl":{"env":{"NCCL X":"1"}}}]})",
                R"($.pools[0].nccl.env["NCCL X"]: name must be letters)"},
        BadCase{"env_reserved", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"env":{"NCCL_IB_GID_INDEX":"3"}}}]})",
                "$.pools[0].nccl.env.NCCL_IB_GID_INDEX: NCCL_IB_GID_INDEX is computed on the "
                "node for the granted devices; use gidIndex"},
        BadCase{"env_newline", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"env":{"NCCL_DEBUG":"INFO\nNCCL_IB_HCA=mlx5"}}}]})",
                "$.pools[0].nccl.env.NCCL_DEBUG: value must not contain a newline"},
        BadCase{"env_value_type", R"({"pools":[{"resourceName":"rdma/a",
                "nccl":{"env":{"NCCL_IB_TIMEOUT":22}}}]})",
                "$.pools[0].nccl.env.NCCL_IB_TIMEOUT: expected a string, got 22"},
        BadCase{"resend_zero", R"({"resendIntervalSeconds":0})",
                "$.resendIntervalSeconds: expected an integer from 1 to 3600, got 0"},
        BadCase{"unused_rdma_after", R"({"unusedRdmaAfterSeconds":-1})",
                "$.unusedRdmaAfterSeconds: expected an integer from 0 to 86400, got -1"},
        BadCase{"health_poll", R"({"healthPollMs":"fast"})",
                "$.healthPollMs: expected an integer, got \"fast\""},
        BadCase{"version", R"({"version":"v2"})", R"($.version: expected one of "v1", got "v2")"},
        BadCase{"not_json", R"({"pools":)", "config: invalid JSON"},
        BadCase{"duplicate_key", R"({"pools":[{"resourceName":"rdma/a","resourceName":"rdma/b"}]})",
                R"(config: $.pools[0]: duplicate key "resourceName")"},
        BadCase{"not_an_object", R"([])", "$: expected an object"},
        BadCase{
            "memlock_small", R"({"memlock":65535})",
            R"($.memlock: expected "unlimited", "off" or an integer byte count of at least 65536, got 65535)"},
        BadCase{
            "memlock_string_count", R"({"memlock":"1048576"})",
            R"($.memlock: expected "unlimited", "off" or an integer byte count of at least 65536, got "1048576")"},
        BadCase{"memlock_negative", R"({"memlock":-1})", "$.memlock: expected"},
        BadCase{"memlock_fraction", R"({"memlock":1048576.5})", "$.memlock: expected"},
        BadCase{"memlock_case", R"({"memlock":"Unlimited"})", "$.memlock: expected"},
        BadCase{"memlock_hook_relative", R"({"memlockHookPath":"bin/hook"})",
                R"($.memlockHookPath: must be an absolute file path on the host, got "bin/hook")"},
        BadCase{"memlock_log_newline", R"({"memlockLogFile":"/var/log/a\nb"})",
                "$.memlockLogFile: must not contain a newline"}),
    [](const auto& info) { return info.param.description; });

TEST(ParsePluginConfig, ReportsSeveralProblemsAtOnce) {
  auto got = parse(R"({"pools":[{"resourceName":"x","mode":"both"}],"extra":1})");
  ASSERT_FALSE(got.ok());
  const std::string& m = got.error().message;
  EXPECT_NE(m.find("$.pools[0].resourceName"), std::string::npos) << m;
  EXPECT_NE(m.find("$.pools[0].mode"), std::string::npos) << m;
  EXPECT_NE(m.find("$.extra: unknown key"), std::string::npos) << m;
}

TEST(ValidateExtendedResourceName, AcceptsDomainQualifiedNames) {
  for (const char* ok : {"rdma/hca", "rdma/shared", "nvidia.com/gpu", "example.com/a_b.c-d",
                         "vpc.amazonaws.com/efa", "a/B"}) {
    EXPECT_TRUE(validateExtendedResourceName(ok).ok()) << ok;
  }
  for (const char* bad : {"", "/", "rdma/", "/hca", "rdma/hca/x", "rdma_x/hca", "rdma./hca",
                          "node.kubernetes.io/x", "rdma/hca!"}) {
    EXPECT_FALSE(validateExtendedResourceName(bad).ok()) << bad;
  }
  EXPECT_TRUE(validateExtendedResourceName(std::string(244, 'a') + "/x").ok() == false);
  EXPECT_TRUE(validateExtendedResourceName("a/" + std::string(63, 'b')).ok());
  EXPECT_FALSE(validateExtendedResourceName("a/" + std::string(64, 'b')).ok());
}

TEST(SharedDeviceCount, AutoIsSixteenPerHcaCapped) {
  PoolSpec pool;
  EXPECT_EQ(sharedDeviceCount(pool, 8), 128u);
  EXPECT_EQ(sharedDeviceCount(pool, 0), 0u);
  EXPECT_EQ(sharedDeviceCount(pool, 100), kMaxSharedCount);
  pool.shared_count = 3;
  EXPECT_EQ(sharedDeviceCount(pool, 8), 3u);
  pool.mode = PoolMode::kExclusive;
  EXPECT_EQ(sharedDeviceCount(pool, 8), 8u);
}

} // namespace
} // namespace kube_rdma
