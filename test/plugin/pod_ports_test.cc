#include "plugin/pod_ports.h"

#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <sstream>

#include "plugin/pool_resource_manager.h"
#include "podresources/v1/api.grpc.pb.h"
#include "test/fakes/a100_pools.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

// (pod, device:port) of each sample, in order.
std::vector<std::string> samples(const ScrapedFamily& family) {
  std::vector<std::string> out;
  for (const auto& [labels, value] : family.samples) {
    EXPECT_EQ(value, 1);
    EXPECT_EQ(labels.at("resource"), "rdma/shared");
    out.push_back(labels.at("namespace") + "/" + labels.at("pod") + "/" + labels.at("container") +
                  " " + labels.at("device") + ":" + labels.at("port"));
  }
  return out;
}

TEST(PodPortFamily, AnIdOfASharedPoolStandsForEveryPortOfIt) {
  const ScrapedFamily family =
      podPortFamily({{"training", "worker-0", "pytorch", {{"rdma/shared", {"17"}}}, {}}},
                    {a100SharedPool(PoolMode::kShared)}, a100Topology());
  EXPECT_EQ(family.name, "kube_rdma_pod_port_info");
  EXPECT_EQ(family.type, MetricType::kGauge);
  std::vector<std::string> expected;
  for (int i = 1; i <= 8; ++i) { // mlx5_0 carries the default route: not in the pool
    expected.push_back("training/worker-0/pytorch mlx5_" + std::to_string(i) + ":1");
  }
  EXPECT_EQ(samples(family), expected);
}

TEST(PodPortFamily, AnIdOfAnExclusivePoolIsItsHcasPorts) {
  const NodePool pool = a100SharedPool(PoolMode::kExclusive);
  const std::string mlx5_3 = exclusiveId(*a100Topology().findDevice("mlx5_3"));
  const std::string mlx5_7 = exclusiveId(*a100Topology().findDevice("mlx5_7"));
  ASSERT_NE(mlx5_3, "mlx5_3"); // a PCI address
  const ScrapedFamily family =
      podPortFamily({{"training", "worker-0", "pytorch", {{"rdma/shared", {mlx5_7, mlx5_3}}}, {}},
                     {"training", "worker-1", "pytorch", {{"rdma/shared", {"0000:ff:00.0"}}}, {}}},
                    {pool}, a100Topology());
  EXPECT_EQ(samples(family), (std::vector<std::string>{"training/worker-0/pytorch mlx5_3:1",
                                                       "training/worker-0/pytorch mlx5_7:1"}));
}

TEST(PortsHeld, AreThePortsTheFamilyNames) {
  const NodePool pool = a100SharedPool(PoolMode::kExclusive);
  const std::string mlx5_7 = exclusiveId(*a100Topology().findDevice("mlx5_7"));
  EXPECT_EQ(portsHeld({"training", "worker-0", "pytorch", {{"rdma/shared", {mlx5_7}}}, {}}, {pool},
                      a100Topology()),
            (std::vector<HcaPort>{{"mlx5_7", 1}}));
  EXPECT_EQ(portsHeld({"training", "worker-0", "pytorch", {{"rdma/shared", {"9"}}}, {}},
                      {a100SharedPool(PoolMode::kShared)}, a100Topology())
                .size(),
            8u);
  EXPECT_TRUE(portsHeld({"training", "worker-0", "pytorch", {{"nvidia.com/gpu", {"GPU-1"}}}, {}},
                        {pool}, a100Topology())
                  .empty());
}

TEST(PodPortFamily, OtherResourcesAndClaimsAreNotOurs) {
  const ScrapedFamily family =
      podPortFamily({{"training", "worker-0", "pytorch", {{"nvidia.com/gpu", {"GPU-1"}}}, {}},
                     {"training",
                      "worker-1",
                      "pytorch",
                      {},
                      {{"training", "nic", "rdma.kube-rdma.io", "node-a", "mlx5-1"}}}},
                    {a100SharedPool(PoolMode::kShared)}, a100Topology());
  EXPECT_TRUE(family.samples.empty());
}

// The kubelet's side of the socket, answering List with `response` as it serves it.
class PodResourcesServer final : public v1::PodResourcesLister::Service {
public:
  explicit PodResourcesServer(v1::ListPodResourcesResponse response)
      : response_(std::move(response)) {}
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    *response = response_;
    return grpc::Status::OK;
  }

private:
  v1::ListPodResourcesResponse response_;
};

TEST(ListPodResources, ReadsDevicesAndClaimsOfEveryContainerThatHoldsOne) {
  v1::ListPodResourcesResponse response;
  auto* pod = response.add_pod_resources();
  pod->set_name("worker-0");
  pod->set_namespace_("training");
  auto* holder = pod->add_containers();
  holder->set_name("pytorch");
  auto* devices = holder->add_devices();
  devices->set_resource_name("rdma/shared");
  devices->add_device_ids("3");
  auto* gpus = holder->add_devices();
  gpus->set_resource_name("nvidia.com/gpu");
  gpus->add_device_ids("GPU-1");
  gpus->add_device_ids("GPU-2");
  auto* claim = holder->add_dynamic_resources();
  claim->set_claim_name("nic");
  claim->set_claim_namespace("training");
  auto* device = claim->add_claim_resources();
  device->set_driver_name("rdma.kube-rdma.io");
  device->set_pool_name("node-a");
  device->set_device_name("mlx5-1");
  pod->add_containers()->set_name("sidecar"); // holds nothing: left out

  TempDir dir;
  const std::string socket = dir.path() + "/kubelet.sock";
  PodResourcesServer service(response);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  ASSERT_TRUE(server);

  auto held = listPodResources(socket, std::chrono::seconds(10));
  ASSERT_TRUE(held.ok()) << held.error().message;
  const std::vector<ContainerHoldings> expected{
      {"training",
       "worker-0",
       "pytorch",
       {{"nvidia.com/gpu", {"GPU-1", "GPU-2"}}, {"rdma/shared", {"3"}}},
       {{"training", "nic", "rdma.kube-rdma.io", "node-a", "mlx5-1"}}}};
  EXPECT_EQ(*held, expected);
  server->Shutdown();
}

TEST(ListPodResources, NoKubeletIsAnErrorNamingTheSocket) {
  TempDir dir;
  auto held = listPodResources(dir.path() + "/kubelet.sock", std::chrono::milliseconds(200));
  ASSERT_FALSE(held.ok());
  EXPECT_TRUE(
      held.error().message.starts_with("PodResources List on " + dir.path() + "/kubelet.sock: "))
      << held.error().message;
}

TEST(PodResourcesReader, AFailedListIsCountedEachTimeAndLoggedOnceUntilItChanges) {
  TempDir dir;
  std::ostringstream log;
  Logger logger(log);
  int errors = 0;
  PodResourcesReader reader(dir.path() + "/kubelet.sock", logger, [&errors] { ++errors; });
  EXPECT_FALSE(reader.read());
  EXPECT_FALSE(reader.read());
  EXPECT_EQ(errors, 2);
  const std::string text = log.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("cannot read the kubelet's PodResources"), std::string::npos) << text;

  int unused = 0;
  PodResourcesReader off("", logger, [&unused] { ++unused; });
  EXPECT_FALSE(off.read());
  EXPECT_EQ(unused, 0);
}

} // namespace
} // namespace kube_rdma
