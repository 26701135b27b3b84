// The real rdma-device-plugin binary against generated fixtures and the kubelet simulator.
// Waits use generous deadlines for events; speed is measured by plugin_bench, not here.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "pluginregistration/v1/api.grpc.pb.h"
#include "test/nfd_feature_reader.h"
#include "test/plugin/plugin_test_base.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
constexpr milliseconds kDeadline{10000};
constexpr const char* kShared = "rdma/shared";
constexpr const char* kExclusive = "example.com/hca";

std::string exclusiveConfig() {
  return R"({"version": "v1", "pools": [
    {"resourceName": "example.com/hca", "mode": "exclusive",
     "selector": {"linkLayer": "Ethernet", "deviceNames": ["mlx5_*"]}}]})";
}

class PluginIntegrationTest : public PluginTestBase {
protected:
  PluginIntegrationTest() : PluginTestBase(kDeadline) {}

  // Starts the kubelet, then the plugin on the fixture: the generated one, or a private copy for
  // tests that modify the tree.
  void startPlugin(const std::string& fixture, std::vector<std::string> extra = {},
                   bool modifies_tree = false) {
    prepareNode(fixture, modifies_tree);
    if (HasFatalFailure()) {
      return;
    }
    std::vector<std::string> args = nodeArgs(registry_dir_);
    args.insert(args.end(), extra.begin(), extra.end());
    launchPlugin(args, "plugin.log");
  }

  // Files and log lines do not wake the simulator's waiters: look now and then.
  bool waitForLog(const std::string& text) {
    return waitUntil([&] { return plugin_->logs().find(text) != std::string::npos; }, kDeadline);
  }

  std::vector<std::string> deviceIds(const std::string& resource) {
    std::vector<std::string> ids;
    const KubeletView view = kubelet_->view();
    for (const auto& d : view.resources.at(resource).devices) {
      ids.push_back(d.id());
    }
    return ids;
  }

  std::string registry_dir_ = tmp_.path() + "/no-registry"; // absent: classic registration
};

TEST_F(PluginIntegrationTest, RegistersTheDefaultPoolOnTheA100NodeAndExitsCleanlyOnSigterm) {
  startPlugin("a100-roce");
  // RoCE only: rdma/shared, auto = 16 IDs per HCA for the eight data NICs.
  ASSERT_TRUE(waitForHealthy(kShared, 128, 128));
  const auto view = kubelet_->view();
  EXPECT_TRUE(view.rejections.empty());
  EXPECT_FALSE(view.resources.at(kShared).options.get_preferred_allocation_available());
  EXPECT_EQ(view.resources.count("rdma/hca"), 0u); // no InfiniBand port on this node
  const std::string socket = view.resources.at(kShared).endpoint;
  EXPECT_TRUE(fs::exists(socket));
  EXPECT_TRUE(waitUntil([&] { return fs::exists(state_dir_ + "/topology.json"); }, kDeadline));

  auto exit_code = plugin_->terminate(kDeadline);
  ASSERT_TRUE(exit_code.ok()) << exit_code.error().message;
  EXPECT_EQ(*exit_code, 0);
  EXPECT_FALSE(fs::exists(socket));
}

TEST_F(PluginIntegrationTest, AllocateGrantsTheEightDataNicsWithNcclSettingsAndConf) {
  startPlugin("a100-roce");
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  auto answer = kubelet_->allocate(kShared, {"7"});
  ASSERT_TRUE(answer.ok()) << answer.error().message;

  std::vector<std::string> expected_nodes;
  for (int i = 1; i <= 8; ++i) {
    expected_nodes.push_back("/dev/infiniband/" + uverbsOf("mlx5_" + std::to_string(i)));
  }
  expected_nodes.push_back("/dev/infiniband/rdma_cm");
  std::vector<std::string> nodes;
  for (const auto& spec : answer->devices()) {
    nodes.push_back(spec.host_path());
    EXPECT_EQ(spec.container_path(), spec.host_path());
    EXPECT_EQ(spec.permissions(), "rw");
  }
  EXPECT_EQ(nodes, expected_nodes);
  EXPECT_EQ(answer->envs().at("NCCL_IB_HCA"),
            "=mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1");
  EXPECT_EQ(answer->envs().at("NCCL_IB_DISABLE"), "0");
  // No config: the index all eight RoCE ports agree on, and the management netdev (eth0 here),
  // which is also the pod network's interface.
  EXPECT_EQ(answer->envs().at("NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(answer->envs().at("NCCL_SOCKET_IFNAME"), "=eth0");

  ASSERT_EQ(answer->mounts_size(), 1);
  EXPECT_EQ(answer->mounts(0).container_path(), "/etc/nccl.conf");
  EXPECT_TRUE(answer->mounts(0).read_only());
  EXPECT_EQ(fs::path(answer->mounts(0).host_path()).parent_path(), fs::path(state_dir_));
  const std::string conf = readTestFile(answer->mounts(0).host_path());
  EXPECT_NE(conf.find("NCCL_IB_HCA==mlx5_1:1,"), std::string::npos) << conf;
  EXPECT_NE(conf.find("\nNCCL_IB_GID_INDEX=3\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("\nNCCL_SOCKET_IFNAME==eth0\n"), std::string::npos) << conf;
}

// The guide's CCE pod asks for rdma/hca on a RoCE cluster, unchanged; the example config that
// offers every data port as rdma/hca serves it.
TEST_F(PluginIntegrationTest, TheGuidesHandwrittenRocePodIsServedWithTheEveryPortExample) {
  const auto pod = nlohmann::json::parse(
      readTestFile(std::string(KUBE_RDMA_SOURCE_DIR) +
                   "/test/webhook/testdata/pods/pytorchjob-master-handwritten.json"));
  const auto& limits = pod["spec"]["containers"][0]["resources"]["limits"];
  ASSERT_EQ(limits.value("rdma/hca", ""), "1");
  startPlugin("a100-roce", {"--config", std::string(KUBE_RDMA_SOURCE_DIR) +
                                            "/examples/every-port-as-hca/plugin-config.json"});
  ASSERT_TRUE(waitForHealthy("rdma/hca", 128));
  EXPECT_EQ(kubelet_->view().resources.count(kShared), 0u);
  auto answer = kubelet_->allocate("rdma/hca", {deviceIds("rdma/hca").front()});
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->envs().at("NCCL_IB_HCA"),
            "=mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1");
  EXPECT_EQ(answer->envs().at("NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(answer->devices_size(), 9); // eight uverbs nodes and rdma_cm
}

TEST_F(PluginIntegrationTest, UnknownIdsAreRefusedWithAnErrorNamingThem) {
  startPlugin("a100-roce");
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  const int lists_before = kubelet_->view().resources.at(kShared).lists_received;
  auto answer = kubelet_->allocate(kShared, {"3", "ghost-1", "999"});
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.error().message.find("ghost-1"), std::string::npos);
  EXPECT_NE(answer.error().message.find("999"), std::string::npos);
  // ...and the kubelet gets a fresh list.
  EXPECT_TRUE(kubelet_->waitFor(
      [&](const KubeletView& v) { return v.resources.at(kShared).lists_received > lists_before; },
      kDeadline));
}

TEST_F(PluginIntegrationTest, ExclusivePoolPrefersOneNumaNodeAndHonoursMustInclude) {
  ConfigMapDir config(tmp_.sub("config"));
  config.publish(exclusiveConfig());
  startPlugin("a100-roce", {"--config", config.path()});
  ASSERT_TRUE(waitForHealthy(kExclusive, 8, 8));
  const auto view = kubelet_->view();
  ASSERT_TRUE(view.resources.at(kExclusive).options.get_preferred_allocation_available());
  std::map<std::string, int64_t> numa;
  for (const auto& d : view.resources.at(kExclusive).devices) {
    ASSERT_EQ(d.topology().nodes_size(), 1);
    numa[d.id()] = d.topology().nodes(0).id();
  }
  const auto ids = deviceIds(kExclusive);
  std::string on_numa1;
  for (const auto& [id, node] : numa) {
    if (node == 1) {
      on_numa1 = id;
      break;
    }
  }
  ASSERT_FALSE(on_numa1.empty());
  auto preferred = kubelet_->preferredAllocation(kExclusive, ids, {on_numa1}, 3);
  ASSERT_TRUE(preferred.ok()) << preferred.error().message;
  ASSERT_EQ(preferred->size(), 3u);
  EXPECT_EQ((*preferred)[0], on_numa1);
  for (const auto& id : *preferred) {
    EXPECT_EQ(numa[id], 1) << id;
  }
  // Granting one HCA gives its uverbs node and only its port in NCCL_IB_HCA.
  auto answer = kubelet_->allocate(kExclusive, {on_numa1});
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->devices_size(), 2); // uverbsN + rdma_cm
  EXPECT_EQ(answer->envs().at("NCCL_IB_HCA").find(','), std::string::npos);
}

TEST_F(PluginIntegrationTest, PortDownAndBackIsSeenInListAndWatch) {
  ConfigMapDir config(tmp_.sub("config"));
  config.publish(exclusiveConfig());
  startPlugin("a100-roce", {"--config", config.path()}, true);
  ASSERT_TRUE(waitForHealthy(kExclusive, 8, 8));
  const std::string state = node_ + "/sys/class/infiniband/mlx5_3/ports/1/state";
  writeTestFile(state, "1: DOWN\n");
  ASSERT_TRUE(waitForHealthy(kExclusive, 7, 8));
  writeTestFile(state, "4: ACTIVE\n");
  EXPECT_TRUE(waitForHealthy(kExclusive, 8, 8));
}

TEST_F(PluginIntegrationTest, SharedPoolStaysHealthyUntilNoHcaIsUsable) {
  startPlugin("a100-roce", {}, true);
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  fs::remove(node_ + "/dev/infiniband/" + uverbsOf("mlx5_1"));
  for (int i = 2; i <= 8; ++i) {
    writeTestFile(node_ + "/sys/class/infiniband/mlx5_" + std::to_string(i) + "/ports/1/state",
                  "1: DOWN\n");
  }
  ASSERT_TRUE(waitForHealthy(kShared, 0, 128));
  writeTestFile(node_ + "/sys/class/infiniband/mlx5_5/ports/1/state", "4: ACTIVE\n");
  ASSERT_TRUE(waitForHealthy(kShared, 128, 128));
  auto answer = kubelet_->allocate(kShared, {"0"});
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->envs().at("NCCL_IB_HCA"), "=mlx5_5:1"); // only what is usable
}

TEST_F(PluginIntegrationTest, ReRegistersAfterEachOfTenKubeletRestarts) {
  startPlugin("a100-roce");
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  for (int restart = 1; restart <= 10; ++restart) {
    ASSERT_TRUE(kubelet_->restart().ok());
    ASSERT_TRUE(kubelet_->waitFor(
        [&](const KubeletView& v) {
          const auto& r = v.resources.at(kShared);
          return v.generation == restart && r.registered_generation == restart && r.streaming &&
                 r.healthyCount() == 128;
        },
        kDeadline))
        << "restart " << restart;
  }
  EXPECT_TRUE(kubelet_->allocate(kShared, {"1"}).ok());
}

TEST_F(PluginIntegrationTest, OurSocketDeletedIsServedAndRegisteredAgain) {
  startPlugin("a100-roce");
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  fs::remove(kubelet_->view().resources.at(kShared).endpoint);
  ASSERT_TRUE(kubelet_->waitFor(
      [](const KubeletView& v) { return v.resources.at(kShared).registrations == 2; }, kDeadline));
  EXPECT_TRUE(waitForHealthy(kShared, 128));
}

TEST_F(PluginIntegrationTest, ConfigReloadAppliesGoodConfigsAndKeepsTheLastGoodOnErrors) {
  ConfigMapDir config(tmp_.sub("config"));
  config.publish(exclusiveConfig());
  startPlugin("a100-roce", {"--config", config.path()});
  ASSERT_TRUE(waitForHealthy(kExclusive, 8, 8));

  // Bad: the error names the JSON path; the exclusive pool keeps serving.
  config.publish(R"({"version": "v1", "pools": [{"resourceName": "example.com/hca",
                     "mode": "sometimes"}]})");
  ASSERT_TRUE(waitForLog("config rejected"));
  const std::string logs = plugin_->logs();
  EXPECT_NE(logs.find("pools[0].mode"), std::string::npos) << logs;
  EXPECT_TRUE(kubelet_->allocate(kExclusive, {deviceIds(kExclusive).front()}).ok());

  // Good: a second, shared pool on four of the NICs appears; the exclusive one shrinks.
  config.publish(R"({"version": "v1", "pools": [
    {"resourceName": "example.com/hca", "mode": "exclusive",
     "selector": {"deviceNames": ["mlx5_[1-4]"]}},
    {"resourceName": "example.com/shared", "sharedCount": 4,
     "selector": {"deviceNames": ["mlx5_[5-8]"]}}]})");
  EXPECT_TRUE(waitForHealthy("example.com/shared", 4, 4));
  EXPECT_TRUE(waitForHealthy(kExclusive, 4, 4));
}

TEST_F(PluginIntegrationTest, AReloadedConfigAppliesItsHealthAndResendIntervals) {
  const std::string pools = R"("pools": [{"resourceName": "example.com/hca", "mode": "exclusive",
     "selector": {"linkLayer": "Ethernet", "deviceNames": ["mlx5_*"]}}])";
  ConfigMapDir config(tmp_.sub("config"));
  config.publish(R"({"version": "v1", "healthPollMs": 10000, "resendIntervalSeconds": 3600, )" +
                 pools + "}");
  startPlugin("a100-roce", {"--config", config.path()}, true);
  ASSERT_TRUE(waitForHealthy(kExclusive, 8, 8));
  config.publish(R"({"version": "v1", "healthPollMs": 50, "resendIntervalSeconds": 1, )" + pools +
                 "}");
  ASSERT_TRUE(waitForLog("config reloaded"));

  // The first 10 s health tick is still ahead: only the reloaded 50 ms period sees this in time.
  writeTestFile(node_ + "/sys/class/infiniband/mlx5_3/ports/1/state", "1: DOWN\n");
  ASSERT_TRUE(kubelet_->waitFor(
      [](const KubeletView& v) { return v.resources.at(kExclusive).healthyCount() == 7; },
      milliseconds(5000)));
  // Nothing changes from here on: only the reloaded 1 s re-send brings more lists.
  const int lists = kubelet_->view().resources.at(kExclusive).lists_received;
  EXPECT_TRUE(kubelet_->waitFor(
      [&](const KubeletView& v) { return v.resources.at(kExclusive).lists_received >= lists + 3; },
      kDeadline));
}

TEST_F(PluginIntegrationTest, CdiSpecIsWrittenAndAllocateNamesTheCdiDevices) {
  const std::string cdi_dir = tmp_.path() + "/cdi";
  startPlugin("a100-roce", {"--cdi", "--cdi-dir", cdi_dir});
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  const std::string spec = readTestFile(cdi_dir + "/kube-rdma.io-rdma_shared.json");
  EXPECT_NE(spec.find("\"kind\": \"kube-rdma.io/rdma_shared\""), std::string::npos) << spec;
  EXPECT_NE(spec.find("/dev/infiniband/" + uverbsOf("mlx5_8")), std::string::npos) << spec;
  auto answer = kubelet_->allocate(kShared, {"0"});
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  ASSERT_EQ(answer->cdi_devices_size(), 8);
  EXPECT_EQ(answer->cdi_devices(0).name(), "kube-rdma.io/rdma_shared=mlx5_1");
}

TEST_F(PluginIntegrationTest, AMemlockOnlyReloadRewritesTheCdiSpec) {
  const std::string cdi_dir = tmp_.path() + "/cdi";
  const std::string spec_path = cdi_dir + "/kube-rdma.io-rdma_shared.json";
  ConfigMapDir config(tmp_.sub("config"));
  config.publish(R"({"memlock": "off"})");
  startPlugin("a100-roce", {"--cdi", "--cdi-dir", cdi_dir, "--config", config.path()});
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  EXPECT_EQ(readTestFile(spec_path).find("kube-rdma-memlock-hook"), std::string::npos);
  // The pools are unchanged, so they keep serving; only the spec's hook changes.
  config.publish(R"({"memlock": 1048576})");
  EXPECT_TRUE(waitUntil(
      [&] { return readTestFile(spec_path).find("--memlock=1048576") != std::string::npos; },
      kDeadline))
      << readTestFile(spec_path);
}

// NFD's features.d as the plugin leaves it: only its own file besides dot files, which NFD skips,
// and that file read back by NFD's rules.
TEST_F(PluginIntegrationTest, TheNfdFeaturesFileFollowsThePortStates) {
  const std::string features_dir = tmp_.sub("features.d");
  const std::string path = features_dir + "/kube-rdma";
  startPlugin("a100-roce", {"--nfd-features-file", path}, true);
  ASSERT_TRUE(waitForHealthy(kShared, 128));
  const auto labels = [&] {
    auto file = readNfdFeatureFile(readTestFile(path), std::chrono::system_clock::now());
    return file.ok() ? file->labels : std::map<std::string, std::string>{};
  };
  const auto active = [&](const std::string& count) {
    return waitUntil([&] { return labels()["kube-rdma.io/data-ports-active"] == count; },
                     kDeadline);
  };
  ASSERT_TRUE(active("8")) << readTestFile(path);
  // nvidia_peermem is loaded on the A100 node: the doctor's GPUDirect check passes.
  EXPECT_EQ(labels(), kA100RoceLabels);
  auto expiry = readNfdFeatureFile(readTestFile(path), std::chrono::system_clock::now())->expiry;
  ASSERT_TRUE(expiry.has_value());
  // The default lifetime, 10 minutes, counted from a write that happened just now.
  EXPECT_GT(*expiry, std::chrono::system_clock::now() + std::chrono::minutes(9));
  const std::string state = node_ + "/sys/class/infiniband/mlx5_3/ports/1/state";
  writeTestFile(state, "1: DOWN\n");
  EXPECT_TRUE(active("7")) << readTestFile(path);
  writeTestFile(state, "4: ACTIVE\n");
  EXPECT_TRUE(active("8")) << readTestFile(path);
  for (const auto& entry : fs::directory_iterator(features_dir)) {
    const std::string name = entry.path().filename();
    EXPECT_TRUE(name == "kube-rdma" || name.starts_with(".")) << name;
  }
}

// `rdmactl doctor`'s verdict on GPUDirect RDMA for the node under `node`: "ok", "warn", ...
std::string doctorsGpuDirectVerdict(const std::string& node) {
  const std::string command = std::string(KUBE_RDMA_RDMACTL_BINARY) + " --sysfs-root " + node +
                              "/sys --proc-root " + node + "/proc --dev-root " + node +
                              "/dev --json doctor 2>/dev/null";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[4096];
  while (pipe != nullptr && std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    out += buffer;
  }
  if (pipe != nullptr) {
    ::pclose(pipe);
  }
  const nlohmann::json report = nlohmann::json::parse(out, nullptr, false);
  if (report.is_object() && report.contains("checks")) {
    for (const auto& check : report["checks"]) {
      if (check.value("name", "") == "gpudirect-rdma") {
        return check.value("verdict", "");
      }
    }
  }
  return "no verdict in: " + out;
}

// The GPU operator loads nvidia_peermem after the plugin started: the gpudirect-rdma label
// follows without a restart, and agrees with `rdmactl doctor` before and after.
TEST_F(PluginIntegrationTest, TheGpuDirectLabelFollowsAPeermemModuleLoadedLater) {
  prepareNode("a100-roce", true);
  setPeermemLoaded(node_, false);
  const std::string path = tmp_.sub("features.d") + "/kube-rdma";
  std::vector<std::string> args = nodeArgs(registry_dir_);
  for (const char* flag : {"--nfd-features-file", path.c_str(), "--nfd-features-ttl", "2s"}) {
    args.emplace_back(flag);
  }
  launchPlugin(args, "plugin.log");
  const auto gpudirect = [&] {
    auto file = readNfdFeatureFile(readTestFile(path), std::chrono::system_clock::now());
    return file.ok() ? file->labels.count("kube-rdma.io/gpudirect-rdma") : 2;
  };
  ASSERT_TRUE(waitUntil([&] { return gpudirect() == 0; }, kDeadline)) << readTestFile(path);
  EXPECT_EQ(doctorsGpuDirectVerdict(node_), "warn");
  setPeermemLoaded(node_, true);
  EXPECT_TRUE(waitUntil([&] { return gpudirect() == 1; }, kDeadline)) << readTestFile(path);
  EXPECT_EQ(doctorsGpuDirectVerdict(node_), "ok");
}

TEST_F(PluginIntegrationTest, TheNfdFeaturesFileFollowsAConfigReload) {
  const std::string path = tmp_.sub("features.d") + "/kube-rdma";
  const auto pool = [](const std::string& devices) {
    return R"({"version": "v1", "pools": [{"resourceName": "example.com/hca", "mode": "exclusive",
               "selector": {"linkLayer": "Ethernet", "deviceNames": [)" +
           devices + "]}}]}";
  };
  ConfigMapDir config(tmp_.sub("config"));
  config.publish(pool(R"("mlx5_1", "mlx5_2")"));
  startPlugin("a100-roce", {"--config", config.path(), "--nfd-features-file", path});
  const auto ports = [&](const std::string& count) {
    return waitUntil(
        [&] {
          auto file = readNfdFeatureFile(readTestFile(path), std::chrono::system_clock::now());
          return file.ok() && file->labels["kube-rdma.io/data-ports"] == count;
        },
        kDeadline);
  };
  EXPECT_TRUE(ports("2")) << readTestFile(path);
  config.publish(pool(R"("mlx5_*")"));
  EXPECT_TRUE(ports("8")) << readTestFile(path); // mlx5_0 is the management NIC
}

// The kubelet's plugin watcher, played by hand: it finds the socket in plugins_registry, asks
// GetInfo, reports the registration, then uses the endpoint as a device plugin.
TEST_F(PluginIntegrationTest, ServesThePluginWatcherWhenTheRegistryDirectoryExists) {
  registry_dir_ = tmp_.sub("plugins_registry");
  startPlugin("a100-roce");
  const std::string socket = registry_dir_ + "/kube-rdma-rdma_shared.sock";
  ASSERT_TRUE(waitUntil([&] { return fs::exists(socket); }, kDeadline));
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto registration = pluginregistration::Registration::NewStub(channel);
  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    ASSERT_TRUE(registration->GetInfo(&context, pluginregistration::InfoRequest(), &info).ok());
  }
  EXPECT_EQ(info.type(), "DevicePlugin");
  EXPECT_EQ(info.name(), kShared);
  EXPECT_EQ(info.endpoint(), socket);
  EXPECT_EQ(
      std::vector<std::string>(info.supported_versions().begin(), info.supported_versions().end()),
      std::vector<std::string>{"v1beta1"});
  {
    grpc::ClientContext context;
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(true);
    pluginregistration::RegistrationStatusResponse response;
    ASSERT_TRUE(registration->NotifyRegistrationStatus(&context, status, &response).ok());
  }
  auto plugin = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + info.endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = plugin->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse list;
  ASSERT_TRUE(stream->Read(&list));
  EXPECT_EQ(list.devices_size(), 128);
  context.TryCancel();
  stream->Finish();
  EXPECT_TRUE(waitForLog("kubelet registered pool"));
  EXPECT_TRUE(kubelet_->view().resources.empty()); // nothing went to kubelet.sock
}

} // namespace
} // namespace kube_rdma
