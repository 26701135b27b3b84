#include "dra/claim_rendering.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/util/log.h"
#include "common/pools/nccl_settings.h"
#include "dra/claim_preparer.h"
#include "dra/claim_store.h"
#include "test/dra/dra_test_support.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

using Json = nlohmann::json;
using testing::HasSubstr;

const ClaimRef& kTwoNics = kTwoNicsClaim;
const ClaimRef& kBadConfig = kBadConfigClaim;

Json claimJson(const std::string& file) {
  return Json::parse(readTestData(file));
}

class ClaimRendering : public testing::Test {
protected:
  NodeTopology topology_ = discoverFixture("a100-roce");
  TempDir dir_;
  PrepareContext context_ = testContext(dir_.path());
};

TEST_F(ClaimRendering, AnswersThisDriversDevicesInTheNodesOrder) {
  auto prepared = renderClaim(claimJson("claim-two-nics.json"), kTwoNics, topology_, context_);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  const std::string prefix = "rdma.kube-rdma.io/claim=" + kTwoNics.uid + "-";
  EXPECT_EQ(
      prepared->devices,
      (std::vector<PreparedDevice>{
          {{"nic"}, kTestNode, "pci-0000-13-00-0-p1", {prefix + "pci-0000-13-00-0-p1"}, ""},
          {{"nic"}, kTestNode, "pci-0000-23-00-0-p1", {prefix + "pci-0000-23-00-0-p1"}, ""}}));
}

// A port shared by many claims (--share-ports) can come twice in one claim, each time with its
// own shareID: the kubelet hears of both allocations, the container gets the port once.
TEST_F(ClaimRendering, ASharedPortAllocatedTwiceIsOneDeviceWithBothShareIds) {
  Json claim = claimJson("claim-two-nics.json");
  Json& results = claim["status"]["allocation"]["devices"]["results"];
  results[1]["device"] = "pci-0000-13-00-0-p1";
  results[1]["shareID"] = "6f0c1e0a-0b6e-4a57-9d0f-3c2a1b4d5e6f";
  results[2]["shareID"] = "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70";
  auto prepared = renderClaim(claim, kTwoNics, topology_, context_);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  const std::string id = "rdma.kube-rdma.io/claim=" + kTwoNics.uid + "-pci-0000-13-00-0-p1";
  EXPECT_EQ(prepared->devices,
            (std::vector<PreparedDevice>{
                {{"nic"}, kTestNode, "pci-0000-13-00-0-p1", {id}, results[1]["shareID"]},
                {{"nic"}, kTestNode, "pci-0000-13-00-0-p1", {id}, results[2]["shareID"]}}));
  const Json spec = Json::parse(prepared->files[1].content);
  ASSERT_EQ(spec["devices"].size(), 1u);
  EXPECT_THAT(prepared->files[0].content, HasSubstr("NCCL_IB_HCA==mlx5_1:1\n"));
}

TEST_F(ClaimRendering, TheCdiSpecHasTheDevicesTheHookAndTheMountButNoNcclVariable) {
  auto prepared = renderClaim(claimJson("claim-two-nics.json"), kTwoNics, topology_, context_);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  ASSERT_EQ(prepared->files.size(), 2u);
  const ClaimFile& spec_file = prepared->files[1];
  EXPECT_EQ(spec_file.path,
            context_.cdi_dir + "/rdma.kube-rdma.io-claim_" + kTwoNics.uid + ".json");
  const Json spec = Json::parse(spec_file.content);
  EXPECT_EQ(spec["kind"], "rdma.kube-rdma.io/claim");
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], kTwoNics.uid + "-pci-0000-13-00-0-p1");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
            topology_.findDevice("mlx5_1")->uverbsDevicePath());
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["path"],
            topology_.findDevice("mlx5_2")->uverbsDevicePath());
  const Json& edits = spec["containerEdits"];
  EXPECT_EQ(edits["deviceNodes"][0]["path"], "/dev/infiniband/rdma_cm");
  std::vector<std::string> env = edits["env"].get<std::vector<std::string>>();
  EXPECT_THAT(env, testing::Contains("KUBE_RDMA_CDI=1"));
  EXPECT_THAT(env, testing::Contains("KUBE_RDMA_DEVICES=mlx5_1,mlx5_2"));
  EXPECT_THAT(env, testing::Contains("KUBE_RDMA_NETDEVS=eth1,eth2"));
  EXPECT_THAT(env, testing::Contains("KUBE_RDMA_CLAIM=ml/train-0-rdma-x7k2p"));
  for (const auto& variable : env) {
    EXPECT_FALSE(variable.starts_with("NCCL_")) << variable;
  }
  EXPECT_EQ(edits["mounts"][0]["hostPath"], prepared->files[0].path);
  EXPECT_EQ(edits["mounts"][0]["containerPath"], "/etc/nccl.conf");
  EXPECT_THAT(edits["mounts"][0]["options"].get<std::vector<std::string>>(),
              testing::Contains("ro"));
  // The claim's own RdmaConfig sets memlock to 16 GiB.
  EXPECT_EQ(edits["hooks"][0]["hookName"], "createRuntime");
  EXPECT_THAT(edits["hooks"][0]["args"].get<std::vector<std::string>>(),
              testing::Contains("--memlock=17179869184"));
}

TEST_F(ClaimRendering, TheNcclConfCarriesExactlyTheClaimsPortsAndTheMergedConfig) {
  auto prepared = renderClaim(claimJson("claim-two-nics.json"), kTwoNics, topology_, context_);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  const ClaimFile& conf = prepared->files[0];
  EXPECT_EQ(conf.path, context_.state_dir + "/nccl-claim-" + kTwoNics.uid + ".conf");
  const NcclEnv settings = parseNcclConf(conf.content);
  const auto value = [&settings](const std::string& name) -> std::string {
    for (const auto& [n, v] : settings) {
      if (n == name) {
        return v;
      }
    }
    return "<unset>";
  };
  EXPECT_EQ(value("NCCL_IB_HCA"), "=mlx5_1:1,mlx5_2:1");
  EXPECT_EQ(value("NCCL_IB_DISABLE"), "0");
  EXPECT_EQ(value("NCCL_IB_GID_INDEX"), "3"); // the A100 fixture's RoCE v2 IPv4 GID
  EXPECT_EQ(value("NCCL_SOCKET_IFNAME"), "=eth0");
  EXPECT_EQ(value("NCCL_IB_TIMEOUT"), "23");           // the claim's value beats the class's
  EXPECT_EQ(value("NCCL_IB_QPS_PER_CONNECTION"), "8"); // the class's, untouched by the claim
  EXPECT_EQ(value("KUBE_RDMA_DEVICES"), "<unset>");
}

TEST_F(ClaimRendering, ABadRdmaConfigNamesItsJsonPath) {
  auto prepared = renderClaim(claimJson("claim-bad-config.json"), kBadConfig, topology_, context_);
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.error().message,
              HasSubstr("status.allocation.devices.config[1].opaque.parameters.gidIndex: "));
  EXPECT_THAT(prepared.error().message,
              HasSubstr("status.allocation.devices.config[1].opaque.parameters.ncclConf."
                        "containerPath: must be an absolute file path"));
  EXPECT_THAT(prepared.error().message,
              HasSubstr("status.allocation.devices.config[1].opaque.parameters.hugepages: "
                        "unknown key"));
}

TEST_F(ClaimRendering, AUidOtherThanTheKubeletsIsAnError) {
  ClaimRef other = kTwoNics;
  other.uid = "00000000-0000-4000-8000-000000000000";
  auto prepared = renderClaim(claimJson("claim-two-nics.json"), other, topology_, context_);
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.error().message, HasSubstr("has metadata.uid \"" + kTwoNics.uid + "\""));
}

TEST_F(ClaimRendering, AnUnallocatedClaimOrAnUnknownDeviceIsAnError) {
  Json claim = claimJson("claim-two-nics.json");
  Json unallocated = claim;
  unallocated["status"].erase("allocation");
  auto prepared = renderClaim(unallocated, kTwoNics, topology_, context_);
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.error().message, HasSubstr("not allocated"));

  claim["status"]["allocation"]["devices"]["results"][2]["device"] = "pci-0000-0c-00-0-p1";
  prepared = renderClaim(claim, kTwoNics, topology_, context_);
  ASSERT_FALSE(prepared.ok()); // mlx5_0, the management NIC, is not published
  EXPECT_THAT(prepared.error().message,
              HasSubstr("status.allocation.devices.results[2].device \"pci-0000-0c-00-0-p1\""));
}

TEST_F(ClaimRendering, AClaimOfAnotherNodesPoolIsAnError) {
  context_.node_name = "gpu-node-2";
  auto prepared = renderClaim(claimJson("claim-two-nics.json"), kTwoNics, topology_, context_);
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.error().message, HasSubstr("no device of driver rdma.kube-rdma.io"));
}

TEST_F(ClaimRendering, TurningNcclConfOffLeavesNoMount) {
  Json claim = claimJson("claim-two-nics.json");
  claim["status"]["allocation"]["devices"]["config"][2]["opaque"]["parameters"]["ncclConf"] = {
      {"enabled", false}};
  auto prepared = renderClaim(claim, kTwoNics, topology_, context_);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  ASSERT_EQ(prepared->files.size(), 1u);
  EXPECT_FALSE(Json::parse(prepared->files[0].content)["containerEdits"].contains("mounts"));
}

// ClaimPreparer with ClaimStore: what ends up on disk.
class ClaimPreparerTest : public testing::Test {
protected:
  static std::vector<std::string> filesIn(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  PreparerHarness harness_;
  const PrepareContext& context_ = harness_.context;
  std::unique_ptr<ClaimPreparer>& preparer_ = harness_.preparer;
  ClaimStorePtr& store_ = harness_.store;
};

TEST_F(ClaimPreparerTest, PrepareWritesTheSpecAndTheNcclConfAndIsIdempotent) {
  auto first = preparer_->prepare(kTwoNics);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::string spec_path = claimCdiSpecPath(context_.cdi_dir, kTwoNics.uid);
  const std::string spec = readTestFile(spec_path);
  const Json parsed = Json::parse(spec);
  EXPECT_EQ(parsed["devices"].size(), 2u);
  EXPECT_THAT(readTestFile(claimNcclConfPath(context_.state_dir, kTwoNics.uid)),
              HasSubstr("NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\n"));

  auto second = preparer_->prepare(kTwoNics);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(readTestFile(spec_path), spec);
  EXPECT_EQ(store_->preparedClaims(), std::vector<std::string>{kTwoNics.uid});
  EXPECT_EQ(filesIn(context_.cdi_dir).size(), 1u); // no temporary file left
}

TEST_F(ClaimPreparerTest, AFailedClaimWritesNothing) {
  ClaimRef recreated = kTwoNics;
  recreated.uid = "00000000-0000-4000-8000-000000000000";
  auto mismatch = preparer_->prepare(recreated);
  ASSERT_FALSE(mismatch.ok());
  auto bad = preparer_->prepare(kBadConfig);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("config[1].opaque.parameters.gidIndex"));
  auto missing = preparer_->prepare(ClaimRef{"ml", "gone", "11111111-2222-4333-8444-555555555555"});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("not found"));
  EXPECT_TRUE(filesIn(context_.cdi_dir).empty());
  EXPECT_THAT(filesIn(context_.state_dir), testing::ElementsAre()); // not even a checkpoint
  EXPECT_TRUE(store_->preparedClaims().empty());
}

TEST_F(ClaimPreparerTest, AWriteThatFailsLeavesNothingBehind) {
  std::filesystem::remove_all(context_.cdi_dir); // the spec cannot be written
  auto prepared = preparer_->prepare(kTwoNics);
  ASSERT_FALSE(prepared.ok());
  EXPECT_FALSE(std::filesystem::exists(claimNcclConfPath(context_.state_dir, kTwoNics.uid)));
  EXPECT_TRUE(store_->preparedClaims().empty());
}

TEST_F(ClaimPreparerTest, UnprepareRemovesTheFilesAndAnUnknownClaimIsNoError) {
  ASSERT_TRUE(preparer_->prepare(kTwoNics).ok());
  ASSERT_TRUE(preparer_->unprepare(kTwoNics).ok());
  EXPECT_TRUE(filesIn(context_.cdi_dir).empty());
  EXPECT_FALSE(std::filesystem::exists(claimNcclConfPath(context_.state_dir, kTwoNics.uid)));
  EXPECT_TRUE(store_->preparedClaims().empty());
  EXPECT_TRUE(preparer_->unprepare(kTwoNics).ok());
  EXPECT_TRUE(preparer_->unprepare(kBadConfig).ok());
}

TEST_F(ClaimPreparerTest, TheCheckpointLetsARestartedDriverUnprepare) {
  ASSERT_TRUE(preparer_->prepare(kTwoNics).ok());
  preparer_.reset();
  store_.reset();
  auto restarted = ClaimStore::open(context_.state_dir);
  ASSERT_TRUE(restarted.ok()) << restarted.error().message;
  EXPECT_EQ((*restarted)->preparedClaims(), std::vector<std::string>{kTwoNics.uid});
  ASSERT_TRUE((*restarted)->unprepare(kTwoNics.uid).ok());
  EXPECT_TRUE(filesIn(context_.cdi_dir).empty());
  EXPECT_THAT(filesIn(context_.state_dir), testing::ElementsAre("dra-checkpoint.json"));
}

TEST(ClaimStore, ADamagedCheckpointIsAnErrorNamingTheFile) {
  TempDir dir;
  writeTestFile(dir.path() + "/dra-checkpoint.json", "{\"version\":1,\"claims\":[]}");
  auto store = ClaimStore::open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.error().message, HasSubstr(dir.path() + "/dra-checkpoint.json is damaged"));
}

} // namespace
} // namespace kube_rdma
