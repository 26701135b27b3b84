// The kubelet's side of the DRA driver over real gRPC on unix sockets: the plugin watcher's
// registration, then NodePrepareResources and NodeUnprepareResources in both API versions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "dra/device_health.h"
#include "dra/dra_server.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "test/dra/dra_test_support.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using testing::HasSubstr;

std::shared_ptr<grpc::Channel> dial(const std::string& socket) {
  return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
}

template <class Claim>
void setClaim(Claim* claim, const std::string& namespace_name, const std::string& name,
              const std::string& uid) {
  claim->set_namespace_(namespace_name);
  claim->set_name(name);
  claim->set_uid(uid);
}

class DraKubelet : public testing::Test {
protected:
  void SetUp() override {
    health_.update(deviceHealth(discoverFixture("a100-roce"), defaultPluginConfig()));
    auto server = DraKubeletServer::start(dir_.path() + "/plugins_registry",
                                          dir_.path() + "/plugins/rdma.kube-rdma.io",
                                          *harness_.preparer, health_, harness_.logger);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
  }

  // What the kubelet's plugin watcher does with a new socket in plugins_registry.
  pluginregistration::PluginInfo getInfo() {
    auto stub = pluginregistration::Registration::NewStub(dial(registrationSocket()));
    grpc::ClientContext context;
    pluginregistration::PluginInfo info;
    EXPECT_TRUE(stub->GetInfo(&context, pluginregistration::InfoRequest(), &info).ok());
    return info;
  }

  std::string registrationSocket() const {
    return dir_.path() + "/plugins_registry/rdma.kube-rdma.io-reg.sock";
  }

  PreparerHarness harness_;
  const TempDir& dir_ = harness_.dir;
  RealClock clock_;
  DraHealthService health_{kTestNode, clock_};
  DraKubeletServerPtr server_;
};

TEST_F(DraKubelet, RegistrationNamesTheDriverItsSocketAndV1First) {
  const auto info = getInfo();
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "rdma.kube-rdma.io");
  EXPECT_EQ(info.endpoint(), dir_.path() + "/plugins/rdma.kube-rdma.io/dra.sock");
  EXPECT_THAT(info.supported_versions(),
              testing::ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth"));
  auto stub = pluginregistration::Registration::NewStub(dial(registrationSocket()));
  grpc::ClientContext context;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse reply;
  EXPECT_TRUE(stub->NotifyRegistrationStatus(&context, status, &reply).ok());
  EXPECT_THAT(harness_.log.str(), HasSubstr("kubelet registered the DRA driver"));
}

TEST_F(DraKubelet, V1PrepareAnswersEveryClaimThenUnprepareRemovesTheSpec) {
  auto stub = v1::DRAPlugin::NewStub(dial(getInfo().endpoint()));
  v1::NodePrepareResourcesRequest request;
  setClaim(request.add_claims(), "ml", "train-0-rdma-x7k2p",
           "3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  setClaim(request.add_claims(), "ml", "train-1-rdma-q9d4m",
           "c4e7b1a0-2d3f-4e5a-8b9c-0d1e2f3a4b5c");
  v1::NodePrepareResourcesResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodePrepareResources(&context, request, &response).ok());
  }
  ASSERT_EQ(response.claims().size(), 2u);
  const auto& good = response.claims().at("3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  EXPECT_EQ(good.error(), "");
  ASSERT_EQ(good.devices().size(), 2);
  EXPECT_EQ(good.devices(0).pool_name(), kTestNode);
  EXPECT_EQ(good.devices(0).device_name(), "pci-0000-13-00-0-p1");
  EXPECT_THAT(good.devices(0).request_names(), testing::ElementsAre("nic"));
  EXPECT_THAT(good.devices(0).cdi_device_ids(),
              testing::ElementsAre("rdma.kube-rdma.io/claim=3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13-"
                                   "pci-0000-13-00-0-p1"));
  const auto& bad = response.claims().at("c4e7b1a0-2d3f-4e5a-8b9c-0d1e2f3a4b5c");
  EXPECT_THAT(bad.error(), HasSubstr("status.allocation.devices.config[1].opaque.parameters"));
  const std::string spec =
      claimCdiSpecPath(harness_.context.cdi_dir, "3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  EXPECT_TRUE(std::filesystem::exists(spec));

  v1::NodeUnprepareResourcesRequest unprepare;
  setClaim(unprepare.add_claims(), "ml", "train-0-rdma-x7k2p",
           "3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  setClaim(unprepare.add_claims(), "ml", "never-prepared", "99999999-8888-4777-8666-555555555555");
  v1::NodeUnprepareResourcesResponse unprepared;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodeUnprepareResources(&context, unprepare, &unprepared).ok());
  }
  ASSERT_EQ(unprepared.claims().size(), 2u); // every claim of the request has an entry
  EXPECT_EQ(unprepared.claims().at("3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13").error(), "");
  EXPECT_EQ(unprepared.claims().at("99999999-8888-4777-8666-555555555555").error(), "");
  EXPECT_FALSE(std::filesystem::exists(spec));
}

TEST_F(DraKubelet, V1beta1ServesTheSameCalls) {
  auto stub = v1beta1::DRAPlugin::NewStub(dial(getInfo().endpoint()));
  v1beta1::NodePrepareResourcesRequest request;
  setClaim(request.add_claims(), "ml", "train-0-rdma-x7k2p",
           "3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  v1beta1::NodePrepareResourcesResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->NodePrepareResources(&context, request, &response).ok());
  }
  const auto& claim = response.claims().at("3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  EXPECT_EQ(claim.error(), "");
  EXPECT_EQ(claim.devices().size(), 2);
  v1beta1::NodeUnprepareResourcesRequest unprepare;
  setClaim(unprepare.add_claims(), "ml", "train-0-rdma-x7k2p",
           "3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13");
  v1beta1::NodeUnprepareResourcesResponse unprepared;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->NodeUnprepareResources(&context, unprepare, &unprepared).ok());
  EXPECT_EQ(unprepared.claims().size(), 1u);
  EXPECT_TRUE(harness_.store->preparedClaims().empty());
}

TEST_F(DraKubelet, TheHealthStreamSendsEveryDeviceAndThenEachChange) {
  auto stub = ::v1::DRAResourceHealth::NewStub(dial(getInfo().endpoint()));
  grpc::ClientContext context;
  // A generous deadline so that a missing update fails the test instead of hanging it.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub->NodeWatchResources(&context, ::v1::NodeWatchResourcesRequest());
  ::v1::NodeWatchResourcesResponse first;
  ASSERT_TRUE(stream->Read(&first));
  ASSERT_EQ(first.devices().size(), 8);
  for (const auto& device : first.devices()) {
    EXPECT_EQ(device.device().pool_name(), kTestNode);
    EXPECT_EQ(device.health(), ::v1::HEALTHY) << device.device().device_name();
    EXPECT_GT(device.last_updated_time(), 0);
  }
  // mlx5_3 (0000:33:00.0) goes down: the fixture "port-down" is the same node in that state.
  health_.update(deviceHealth(discoverFixture("port-down"), defaultPluginConfig()));
  ::v1::NodeWatchResourcesResponse second;
  ASSERT_TRUE(stream->Read(&second));
  ASSERT_EQ(second.devices().size(), 8);
  for (const auto& device : second.devices()) {
    const bool down = device.device().device_name() == "pci-0000-33-00-0-p1";
    EXPECT_EQ(device.health(), down ? ::v1::UNHEALTHY : ::v1::HEALTHY)
        << device.device().device_name();
    if (down) {
      EXPECT_EQ(device.message(), "mlx5_3 port 1 is DOWN");
    }
  }
  context.TryCancel();
}

TEST_F(DraKubelet, StoppingRemovesBothSockets) {
  const std::string dra_socket = server_->draSocket();
  server_.reset();
  EXPECT_FALSE(std::filesystem::exists(dra_socket));
  EXPECT_FALSE(std::filesystem::exists(registrationSocket()));
}

} // namespace
} // namespace kube_rdma
