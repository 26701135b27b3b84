#include "dra/rdma_config.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

const std::string kPath = "status.allocation.devices.config[1].opaque.parameters";

Result<RdmaConfig> parse(const std::string& text) {
  return parseRdmaConfig(nlohmann::json::parse(text), kPath);
}

TEST(RdmaConfig, ReadsEveryField) {
  auto config = parse(R"({"apiVersion":"rdma.kube-rdma.io/v1alpha1","kind":"RdmaConfig",
      "gidIndex":3,"addrFamily":"AF_INET","addrRange":"25.11.128.0/19",
      "ncclConf":{"enabled":true,"containerPath":"/opt/nccl.conf"},
      "env":{"NCCL_IB_TIMEOUT":"22"},"memlock":"unlimited"})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nccl.gid_index_mode, GidIndexMode::kFixed);
  EXPECT_EQ(config->nccl.gid_index, 3u);
  ASSERT_TRUE(config->nccl.gid_policy.range.has_value());
  EXPECT_EQ(config->nccl.gid_policy.range->prefix_length, 19u);
  EXPECT_EQ(config->nccl.nccl_conf_path, "/opt/nccl.conf");
  EXPECT_EQ(config->nccl.env, (NcclEnv{{"NCCL_IB_TIMEOUT", "22"}}));
  EXPECT_EQ(config->memlock.mode, MemlockLimit::Mode::kUnlimited);
  EXPECT_EQ(config->given, (std::set<std::string>{"gidIndex", "addrFamily", "addrRange", "ncclConf",
                                                  "env", "memlock"}));
}

TEST(RdmaConfig, OnlyTheHeaderIsRequired) {
  auto config = parse(R"({"apiVersion":"rdma.kube-rdma.io/v1alpha1","kind":"RdmaConfig"})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->given.empty());
}

struct BadCase {
  std::string description;
  std::string parameters;
  std::string error; // a substring of the message
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.description;
}

class RdmaConfigBad : public testing::TestWithParam<BadCase> {};

TEST_P(RdmaConfigBad, NamesTheJsonPath) {
  auto config = parse(GetParam().parameters);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find(GetParam().error), std::string::npos)
      << config.error().message;
}

#define HEADER R"("apiVersion":"rdma.kube-rdma.io/v1alpha1","kind":"RdmaConfig")"

INSTANTIATE_TEST_SUITE_P(
    Cases, RdmaConfigBad,
    testing::Values(
        BadCase{"not_an_object", R"("gidIndex=3")", kPath + ": expected an object"},
        BadCase{"no_api_version", R"({"kind":"RdmaConfig"})", kPath + ".apiVersion: "},
        BadCase{"wrong_api_version", R"({"apiVersion":"rdma.kube-rdma.io/v1","kind":"RdmaConfig"})",
                kPath + ".apiVersion: expected"},
        BadCase{"wrong_kind", R"({"apiVersion":"rdma.kube-rdma.io/v1alpha1","kind":"Config"})",
                kPath + ".kind: expected"},
        BadCase{"gid_index_word", "{" HEADER R"(,"gidIndex":"three"})",
                kPath + R"(.gidIndex: expected "unset", "agreed" or an integer)"},
        BadCase{"gid_index_negative", "{" HEADER R"(,"gidIndex":-1})", kPath + ".gidIndex: "},
        BadCase{"addr_family", "{" HEADER R"(,"addrFamily":"inet"})",
                kPath + ".addrFamily: expected one of"},
        BadCase{"addr_range_family", "{" HEADER R"(,"addrRange":"fd00::/8"})",
                kPath + R"(.addrRange: "fd00::/8" is not in addrFamily AF_INET)"},
        BadCase{"conf_path", "{" HEADER R"(,"ncclConf":{"containerPath":"nccl.conf"}})",
                kPath + ".ncclConf.containerPath: must be an absolute file path"},
        BadCase{"conf_unknown", "{" HEADER R"(,"ncclConf":{"path":"/x"}})",
                kPath + ".ncclConf.path: unknown key"},
        BadCase{"env_reserved", "{" HEADER R"(,"env":{"NCCL_IB_HCA":"mlx5_1"}})",
                kPath + ".env.NCCL_IB_HCA: NCCL_IB_HCA is computed on the node"},
        BadCase{"env_newline", "{" HEADER R"(,"env":{"NCCL_DEBUG":"INFO\nX=1"}})",
                kPath + ".env.NCCL_DEBUG: value must not contain a newline"},
        BadCase{"memlock_small", "{" HEADER R"(,"memlock":1024})",
                kPath + ".memlock: expected \"unlimited\", \"off\" or an integer"},
        BadCase{"unknown_key", "{" HEADER R"(,"hugepages":true})",
                kPath + ".hugepages: unknown key"}),
    [](const testing::TestParamInfo<BadCase>& info) { return info.param.description; });

TEST(RdmaConfig, ReportsEveryProblemAtOnce) {
  auto config = parse("{" HEADER R"(,"gidIndex":"x","memlock":"lots"})");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find(kPath + ".gidIndex"), std::string::npos);
  EXPECT_NE(config.error().message.find(kPath + ".memlock"), std::string::npos);
}

TEST(RdmaConfig, ALaterConfigOverridesOnlyTheKeysItGives) {
  auto first = parse("{" HEADER R"(,"gidIndex":3,"env":{"NCCL_IB_TIMEOUT":"22","NCCL_DEBUG":"WARN"},
                                  "memlock":"off"})");
  auto second = parse("{" HEADER R"(,"env":{"NCCL_IB_TIMEOUT":"23"},"addrFamily":"AF_INET6"})");
  ASSERT_TRUE(first.ok() && second.ok());
  const RdmaConfig merged = mergeRdmaConfig(*first, *second);
  EXPECT_EQ(merged.nccl.gid_index_mode, GidIndexMode::kFixed);
  EXPECT_EQ(merged.nccl.gid_index, 3u);
  EXPECT_EQ(merged.nccl.gid_policy.family, GidFamily::kIPv6);
  EXPECT_EQ(merged.memlock.mode, MemlockLimit::Mode::kOff);
  EXPECT_EQ(merged.nccl.env, (NcclEnv{{"NCCL_DEBUG", "WARN"}, {"NCCL_IB_TIMEOUT", "23"}}));
}

} // namespace
} // namespace kube_rdma
