// The real rdma-dra-driver binary on the A100 fixture against the API-server simulator: the slice
// it publishes, its return after the kubelet-style deletion, a prepare over its DRA socket, and
// its clean stop on SIGTERM.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "dra/claim_preparation.h"
#include "dra/resource_slice.h"
#include "dra/v1/api.grpc.pb.h"
#include "test/dra/dra_test_support.h"
#include "test/dra/simulated_api.h"
#include "test/plugin/plugin_process.h"
#include "test/webhook/eventually.h"

namespace kube_rdma {
namespace {

using nlohmann::json;
namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;

class DriverProcess : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(api_.start(), "");
    api_.simulator().put("nodes", {{"metadata", {{"name", kTestNode}}}});
    const std::string fixture = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";
    auto process = PluginProcess::start(
        KUBE_RDMA_DRA_DRIVER_BINARY,
        {"--node-name", kTestNode, "--kubeconfig", api_.writeKubeconfig(), "--sysfs-root",
         fixture + "/sys", "--proc-root", fixture + "/proc", "--plugin-registry-dir",
         dir_.path() + "/plugins_registry", "--plugin-dir", dir_.path() + "/plugins/dra",
         "--cdi-dir", dir_.path() + "/cdi", "--state-dir", dir_.path() + "/state"},
        dir_.path() + "/driver.log");
    ASSERT_TRUE(process.ok()) << process.error().message;
    driver_ = std::move(*process);
  }

  std::vector<json> nodeSlices() {
    ApiResult<ObjectList> listed = api_.api().list("/apis/resource.k8s.io/v1/resourceslices",
                                                   {"", std::string("spec.nodeName=") + kTestNode});
    return listed.ok() ? listed->items : std::vector<json>{};
  }

  TempDir dir_;
  SimulatedApi api_;
  PluginProcessPtr driver_;
};

TEST_F(DriverProcess, PublishesRestoresPreparesAndStops) {
  ASSERT_TRUE(eventually([&] { return nodeSlices().size() == 1; })) << driver_->logs();
  const json slice = nodeSlices()[0];
  EXPECT_EQ(slice["spec"]["driver"], kDraDriverName);
  EXPECT_EQ(slice["spec"]["devices"].size(), 8u);

  // The kubelet deletes a node's slices when it starts; the driver puts them back within 5 s.
  const auto deleted = std::chrono::steady_clock::now();
  ASSERT_TRUE(api_.simulator().remove("resourceslices", "", slice["metadata"]["name"]));
  ASSERT_TRUE(eventually([&] { return nodeSlices().size() == 1; })) << driver_->logs();
  EXPECT_LT(std::chrono::steady_clock::now() - deleted, std::chrono::seconds(5));
  EXPECT_GT(nodeSlices()[0]["spec"]["pool"]["generation"].get<int64_t>(),
            slice["spec"]["pool"]["generation"].get<int64_t>());

  const json claim =
      api_.simulator().put("resourceclaims", json::parse(readTestData("claim-two-nics.json")));
  const std::string uid = claim["metadata"]["uid"];
  const std::string socket = dir_.path() + "/plugins/dra/dra.sock";
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket); })) << driver_->logs();
  auto stub = v1::DRAPlugin::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  v1::NodePrepareResourcesRequest request;
  auto* wanted = request.add_claims();
  wanted->set_namespace_("ml");
  wanted->set_name("train-0-rdma-x7k2p");
  wanted->set_uid(uid);
  v1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->NodePrepareResources(&context, request, &response).ok());
  EXPECT_EQ(response.claims().at(uid).error(), "") << driver_->logs();
  EXPECT_EQ(response.claims().at(uid).devices().size(), 2);
  EXPECT_TRUE(std::filesystem::exists(claimCdiSpecPath(dir_.path() + "/cdi", uid)));

  Result<int> exit = driver_->terminate(std::chrono::seconds(20));
  ASSERT_TRUE(exit.ok()) << exit.error().message << driver_->logs();
  EXPECT_EQ(*exit, 0) << driver_->logs();
}

TEST_F(DriverProcess, AClaimTheApiDoesNotHaveIsAnErrorNamingIt) {
  const std::string socket = dir_.path() + "/plugins/dra/dra.sock";
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket); })) << driver_->logs();
  auto stub = v1::DRAPlugin::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  v1::NodePrepareResourcesRequest request;
  auto* wanted = request.add_claims();
  wanted->set_namespace_("ml");
  wanted->set_name("gone");
  wanted->set_uid("11111111-2222-4333-8444-555555555555");
  v1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->NodePrepareResources(&context, request, &response).ok());
  EXPECT_NE(response.claims().at("11111111-2222-4333-8444-555555555555").error().find("not found"),
            std::string::npos);
}

} // namespace
} // namespace kube_rdma
