#include "rdmactl/views.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

NodeTopology fixture(const std::string& name) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  return discoverFromSysfs({base + "/sys", base + "/proc"});
}

TEST(RdmactlViews, A100GidsListEveryDeviceWithV1AndV2Ipv4GidsAt2And3) {
  const auto topo = fixture("a100-roce");
  auto rows = gidRows(topo, "");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 36u); // 9 devices x (2 link-local + 2 IPv4)
  const std::vector<std::string> ips{"10.0.60.3",     "25.11.128.2",   "25.11.128.34",
                                     "25.11.128.66",  "25.11.128.98",  "25.11.128.130",
                                     "25.11.128.162", "25.11.128.194", "25.11.128.226"};
  for (size_t d = 0; d < 9; ++d) {
    const GidRow& v1 = (*rows)[d * 4 + 2];
    const GidRow& v2 = (*rows)[d * 4 + 3];
    EXPECT_EQ(v1.device, "mlx5_" + std::to_string(d));
    EXPECT_EQ(v1.index, 2u);
    EXPECT_EQ(v1.version, "v1");
    EXPECT_EQ(v1.ipv4, ips[d]);
    EXPECT_EQ(v2.index, 3u);
    EXPECT_EQ(v2.version, "v2");
    EXPECT_EQ(v2.ipv4, ips[d]);
    EXPECT_EQ(v2.netdev, "eth" + std::to_string(d));
  }
  const std::string text = renderGidsText(*rows);
  EXPECT_EQ(text.rfind("DEV\tPORT\tINDEX\tGID\tIPv4\tVER\tDEV\tNETNS\n", 0), 0u);
  EXPECT_NE(
      text.find(
          "mlx5_1\t1\t3\t0000:0000:0000:0000:0000:ffff:190b:8002\t25.11.128.2\tv2\teth1\tthis\n"),
      std::string::npos);
  EXPECT_NE(text.find("\nn_gids_found=36\n"), std::string::npos);
}

TEST(RdmactlViews, GidsOfOneDeviceAndUnknownDevices) {
  const auto topo = fixture("sparse-gids");
  auto rows = gidRows(topo, "mlx5_1");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[2].index, 4u);
  auto unknown = gidRows(topo, "mlx5_7");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("mlx5_0, mlx5_1"), std::string::npos);
}

TEST(RdmactlViews, BareLinkLocalGidsAreSkippedLikeShowGids) {
  NodeTopology topo;
  RdmaDevice d;
  d.name = "mlx5_0";
  Port p;
  p.number = 1;
  p.gids.push_back({0, "fe80:0000:0000:0000:0000:0000:0000:0000", GidType::kRoceV1, "eth0", ""});
  p.gids.push_back({1, "fe80:0000:0000:0000:0000:0000:0000:0001", GidType::kRoceV2, "eth0", ""});
  d.ports.push_back(p);
  topo.devices.push_back(d);
  auto rows = gidRows(topo, "");
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].index, 1u);
}

TEST(RdmactlViews, GidsJsonRowsCarryTheContractFields) {
  auto rows = gidRows(fixture("a100-roce"), "mlx5_8");
  const auto json = nlohmann::json::parse(renderGidsJson(*rows));
  ASSERT_EQ(json.size(), 4u);
  EXPECT_EQ(json[3], (nlohmann::json{{"device", "mlx5_8"},
                                     {"port", 1},
                                     {"index", 3},
                                     {"gid", "0000:0000:0000:0000:0000:ffff:190b:80e2"},
                                     {"ipv4", "25.11.128.226"},
                                     {"version", "v2"},
                                     {"netdev", "eth8"},
                                     {"netns", "this"}}));
}

TEST(RdmactlViews, A100NcclEnvLeavesTheManagementNicOut) {
  auto env = poolNcclEnv(fixture("a100-roce"), defaultPluginConfig(), "");
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->pool, "rdma/shared");
  auto conf = renderNcclConf(env->env);
  ASSERT_TRUE(conf.ok());
  EXPECT_EQ(conf->substr(0, conf->find('\n')),
            "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1");
  const auto json = nlohmann::json::parse(*renderNcclEnvJson(*env));
  EXPECT_EQ(json["pool"], "rdma/shared");
  EXPECT_EQ(json["devices"].size(), 8u);
  EXPECT_EQ(json["nccl_conf"], *conf);
}

TEST(RdmactlViews, NcclEnvPerNodeShape) {
  auto ib = poolNcclEnv(fixture("ib-hdr8"), defaultPluginConfig(), "");
  ASSERT_TRUE(ib.ok()) << ib.error().message;
  EXPECT_EQ(ib->pool, "rdma/hca");
  EXPECT_EQ(ib->env.front().second,
            "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
  auto down = poolNcclEnv(fixture("port-down"), defaultPluginConfig(), "rdma/shared");
  ASSERT_TRUE(down.ok()) << down.error().message;
  EXPECT_EQ(down->env.front().second,
            "=mlx5_1:1,mlx5_2:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1");
  auto tens = poolNcclEnv(fixture("mlx5-1-10"), defaultPluginConfig(), "");
  ASSERT_TRUE(tens.ok()) << tens.error().message;
  EXPECT_EQ(tens->env.front().second, "=mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,"
                                      "mlx5_7:1,mlx5_8:1,mlx5_9:1,mlx5_10:1,mlx5_11:1");
}

TEST(RdmactlViews, NcclEnvErrorsNameThePools) {
  auto unknown = poolNcclEnv(fixture("a100-roce"), defaultPluginConfig(), "rdma/nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("rdma/shared (8 HCAs)"), std::string::npos)
      << unknown.error().message;
  auto empty = poolNcclEnv(fixture("a100-roce"), defaultPluginConfig(), "rdma/hca");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no HCAs"), std::string::npos);
}

TEST(RdmactlViews, DevicesLikeIbdev2netdev) {
  const auto topo = fixture("a100-roce");
  const std::string text = renderDevicesText(topo, {{"eth0", "Up"}, {"eth1", "Down"}});
  EXPECT_NE(text.find("mlx5_0 port 1 ==> eth0 (Up)  0000:0c:00.0  MT4123"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[management: default route via eth0]"), std::string::npos);
  EXPECT_NE(text.find("mlx5_1 port 1 ==> eth1 (Down)"), std::string::npos);
  EXPECT_NE(text.find("ACTIVE/LinkUp  Ethernet 200 Gb/sec (4X HDR)  numa 1"), std::string::npos);
  EXPECT_NE(text.find("GPU 0000:12:00.0 0x20b0  numa 0  closest HCA: mlx5_1 (PIX)"),
            std::string::npos);

  const auto json = nlohmann::json::parse(renderDevicesJson(topo, {}));
  EXPECT_EQ(json["devices"].size(), 9u);
  EXPECT_EQ(json["devices"][0]["management"], true);
  EXPECT_EQ(json["devices"][5]["numa_node"], 1);
  EXPECT_EQ(json["gpus"][7]["closest_hcas"], nlohmann::json::array({"mlx5_8"}));
  EXPECT_EQ(json["management_netdev"], "eth0");

  const auto none = renderDevicesJson(fixture("numa-none"), {});
  EXPECT_TRUE(nlohmann::json::parse(none)["devices"][0]["numa_node"].is_null());
}

} // namespace
} // namespace kube_rdma
