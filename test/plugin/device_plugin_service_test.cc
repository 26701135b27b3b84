#include "plugin/device_plugin_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "plugin/device_list_store.h"
#include "plugin/kubelet_registrar.h"
#include "rpc/grpc_socket_server.h"
#include "test/plugin/kubelet_simulator.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
constexpr milliseconds kDeadline{10000};

// A pool whose devices the test sets by hand; Allocate grants uverbs0 for "a".
class FakeResourceManager final : public ResourceManager {
public:
  explicit FakeResourceManager(std::string name) : name_(std::move(name)) {}
  DeviceListStore store;

  std::string resourceName() const override { return name_; }
  bool preferredAllocationAvailable() const override { return true; }
  DeviceList devices() const override { return store.current(); }
  DeviceList waitForChange(uint64_t seen, milliseconds timeout,
                           std::stop_token stop) const override {
    return store.waitForChange(seen, timeout, stop);
  }
  Result<std::vector<std::string>> preferredAllocation(const std::vector<std::string>& available,
                                                       const std::vector<std::string>& must,
                                                       int32_t size) const override {
    std::vector<std::string> out = must;
    for (const auto& id : available) {
      if (static_cast<int32_t>(out.size()) < size &&
          std::find(out.begin(), out.end(), id) == out.end()) {
        out.push_back(id);
      }
    }
    return out;
  }
  Result<ContainerAllocation> allocate(const std::vector<std::string>& ids) override {
    if (ids != std::vector<std::string>{"a"}) {
      return makeError("unknown device IDs: " + ids.front());
    }
    ContainerAllocation out;
    out.devices.push_back({"/dev/infiniband/uverbs0", "/dev/infiniband/uverbs0", "rw"});
    out.envs.push_back({"NCCL_IB_HCA", "=mlx5_0:1"});
    out.mounts.push_back({"/etc/nccl.conf", "/state/nccl-abc.conf", true});
    out.cdi_devices.push_back("kube-rdma.io/hca=mlx5_0");
    return out;
  }

private:
  std::string name_;
};

class ServiceTest : public ::testing::Test {
protected:
  void SetUp() override {
    kubelet_ = std::make_unique<KubeletSimulator>(dir_.path());
    ASSERT_TRUE(kubelet_->start().ok());
    manager_.store.publish({{"a", true, 0}, {"b", true, 1}});
    service_ =
        std::make_unique<DevicePluginService>(manager_, milliseconds(60000), logger_, metrics_);
    auto server =
        GrpcSocketServer::start(dir_.path() + "/" + poolSocketName("rdma/hca"), {service_.get()});
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
  }
  void TearDown() override {
    service_->stop();
    server_.reset();
    kubelet_->stop();
  }
  Status registerPool(const std::string& resource) {
    return registerWithKubelet(dir_.path(), {resource, poolSocketName("rdma/hca"), true},
                               milliseconds(5000));
  }

  TempDir dir_;
  std::ostringstream log_;
  Logger logger_{log_};
  MetricsRegistry metrics_;
  FakeResourceManager manager_{"rdma/hca"};
  std::unique_ptr<KubeletSimulator> kubelet_;
  std::unique_ptr<DevicePluginService> service_;
  GrpcSocketServerPtr server_;
};

TEST_F(ServiceTest, RegistersAndStreamsTheFullListThenEachChange) {
  ASSERT_TRUE(registerPool("rdma/hca").ok());
  ASSERT_TRUE(kubelet_->waitFor(
      [](const KubeletView& v) {
        auto it = v.resources.find("rdma/hca");
        return it != v.resources.end() && it->second.devices.size() == 2;
      },
      kDeadline));
  auto view = kubelet_->view();
  const auto& resource = view.resources.at("rdma/hca");
  EXPECT_TRUE(resource.options.get_preferred_allocation_available());
  EXPECT_EQ(resource.devices[0].id(), "a");
  EXPECT_EQ(resource.devices[0].topology().nodes(0).id(), 0);
  EXPECT_EQ(resource.devices[1].topology().nodes(0).id(), 1);

  manager_.store.publish({{"a", true, 0}, {"b", false, 1}});
  EXPECT_TRUE(kubelet_->waitFor(
      [](const KubeletView& v) { return v.resources.at("rdma/hca").healthyCount() == 1; },
      kDeadline));
}

TEST_F(ServiceTest, KubeletRejectsNamesThatAreNotExtendedResources) {
  const Status status = registerPool("hca");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("not an extended resource name"), std::string::npos);
  EXPECT_FALSE(registerPool("kubernetes.io/hca").ok());
}

TEST_F(ServiceTest, AllocateTranslatesEveryFieldAndRefusalsBecomeGrpcErrors) {
  ASSERT_TRUE(registerPool("rdma/hca").ok());
  auto granted = kubelet_->allocate("rdma/hca", {"a"});
  ASSERT_TRUE(granted.ok()) << granted.error().message;
  ASSERT_EQ(granted->devices_size(), 1);
  EXPECT_EQ(granted->devices(0).host_path(), "/dev/infiniband/uverbs0");
  EXPECT_EQ(granted->devices(0).permissions(), "rw");
  EXPECT_EQ(granted->envs().at("NCCL_IB_HCA"), "=mlx5_0:1");
  EXPECT_EQ(granted->mounts(0).container_path(), "/etc/nccl.conf");
  EXPECT_TRUE(granted->mounts(0).read_only());
  EXPECT_EQ(granted->cdi_devices(0).name(), "kube-rdma.io/hca=mlx5_0");

  auto refused = kubelet_->allocate("rdma/hca", {"zz"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("zz"), std::string::npos);

  auto preferred = kubelet_->preferredAllocation("rdma/hca", {"a", "b"}, {"b"}, 1);
  ASSERT_TRUE(preferred.ok()) << preferred.error().message;
  EXPECT_EQ(*preferred, std::vector<std::string>{"b"});
}

TEST_F(ServiceTest, AllocationCountersStartAtZeroAndCountEachAnswer) {
  ASSERT_TRUE(registerPool("rdma/hca").ok());
  // Both series before any Allocate: increase() over a series that appears at 1 reads 0, so an
  // alert on refusals would miss the first.
  const std::string granted =
      R"(kube_rdma_plugin_allocations_total{outcome="granted",resource="rdma/hca"} )";
  const std::string refused =
      R"(kube_rdma_plugin_allocations_total{outcome="refused",resource="rdma/hca"} )";
  EXPECT_THAT(metrics_.render(), HasSubstr(granted + "0\n"));
  EXPECT_THAT(metrics_.render(), HasSubstr(refused + "0\n"));
  ASSERT_TRUE(kubelet_->allocate("rdma/hca", {"a"}).ok());
  ASSERT_FALSE(kubelet_->allocate("rdma/hca", {"zz"}).ok());
  ASSERT_FALSE(kubelet_->allocate("rdma/hca", {"zz"}).ok());
  EXPECT_THAT(metrics_.render(), HasSubstr(granted + "1\n"));
  EXPECT_THAT(metrics_.render(), HasSubstr(refused + "2\n"));
}

TEST_F(ServiceTest, StoppingTheServiceEndsStreamsSoTheServerShutsDown) {
  ASSERT_TRUE(registerPool("rdma/hca").ok());
  ASSERT_TRUE(kubelet_->waitFor(
      [](const KubeletView& v) { return v.resources.at("rdma/hca").streaming; }, kDeadline));
  const std::string socket = server_->socketPath();
  service_->stop();
  server_.reset();
  EXPECT_FALSE(std::filesystem::exists(socket));
  EXPECT_TRUE(kubelet_->waitFor(
      [](const KubeletView& v) { return !v.resources.at("rdma/hca").streaming; }, kDeadline));
}

TEST(ExtendedResourceName, FollowsTheKubeletsRule) {
  EXPECT_TRUE(isExtendedResourceName("rdma/hca"));
  EXPECT_TRUE(isExtendedResourceName("example.com/shared_a"));
  EXPECT_FALSE(isExtendedResourceName("hca"));
  EXPECT_FALSE(isExtendedResourceName("kubernetes.io/hca"));
  EXPECT_FALSE(isExtendedResourceName("requests.rdma/hca"));
  EXPECT_FALSE(isExtendedResourceName("rdma/-bad"));
}

} // namespace
} // namespace kube_rdma

namespace kube_rdma {
namespace {

TEST(RegistrationMode, PluginWatcherExactlyWhenTheRegistryDirectoryExists) {
  TempDir dir;
  EXPECT_EQ(chooseRegistrationMode(dir.path()), RegistrationMode::kPluginWatcher);
  EXPECT_EQ(chooseRegistrationMode(dir.path() + "/absent"), RegistrationMode::kClassic);
  EXPECT_EQ(poolSocketName("example.com/shared_a"), "kube-rdma-example_com_shared_a.sock");
}

} // namespace
} // namespace kube_rdma
