#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "test/plugin/kubelet_simulator.h"
#include "test/plugin/plugin_process.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

// What the tests that drive the real rdma-device-plugin binary share (plugin_integration_test,
// plugin_faults): a node tree, the kubelet simulator, the plugin process and its log on failure.
// Each test file builds its own command line on top of nodeArgs().
namespace kube_rdma {

// A ConfigMap volume as the kubelet lays it out: config.json -> ..data/config.json, where ..data
// is a symlink to the current version's directory, swapped atomically by a rename.
class ConfigMapDir {
public:
  explicit ConfigMapDir(std::string dir) : dir_(std::move(dir)) {}
  std::string path() const { return dir_ + "/config.json"; }
  void publish(const std::string& text) {
    namespace fs = std::filesystem;
    const std::string version = "..v" + std::to_string(++versions_);
    fs::create_directories(dir_ + "/" + version);
    writeTestFile(dir_ + "/" + version + "/config.json", text);
    fs::create_symlink(version, dir_ + "/..data_tmp");
    fs::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    if (!fs::is_symlink(path())) {
      fs::create_symlink("..data/config.json", path());
    }
  }

private:
  std::string dir_;
  int versions_ = 0;
};

class PluginTestBase : public ::testing::Test {
protected:
  explicit PluginTestBase(std::chrono::milliseconds deadline) : deadline_(deadline) {}

  // Points node_ at the generated fixture, or at a private copy of it for tests that modify the
  // tree, and starts the kubelet simulator on its own device-plugins directory.
  void prepareNode(const std::string& fixture, bool copy_tree) {
    node_ = std::string(KUBE_RDMA_FIXTURES) + "/" + fixture;
    if (copy_tree) {
      const std::string command = "cp -a " + node_ + " " + tmp_.path() + "/";
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      node_ = tmp_.path() + "/" + fixture;
    }
    kubelet_dir_ = tmp_.sub("kubelet");
    state_dir_ = tmp_.path() + "/state";
    kubelet_ = std::make_unique<KubeletSimulator>(kubelet_dir_);
    ASSERT_TRUE(kubelet_->start().ok());
  }

  // The flags that place the plugin on the node and the simulated kubelet.
  std::vector<std::string> nodeArgs(const std::string& plugin_registry_dir) const {
    return {"--sysfs-root",        node_ + "/sys", "--proc-root",
            node_ + "/proc",       "--dev-root",   node_ + "/dev",
            "--device-plugin-dir", kubelet_dir_,   "--plugin-registry-dir",
            plugin_registry_dir,   "--state-dir",  state_dir_};
  }

  // `program` is the plugin itself, or a program that execs it (unshare).
  void launchPlugin(const std::vector<std::string>& args, const std::string& log_name,
                    const std::string& program = KUBE_RDMA_PLUGIN_BINARY) {
    auto plugin = PluginProcess::start(program, args, tmp_.path() + "/" + log_name);
    ASSERT_TRUE(plugin.ok()) << plugin.error().message;
    plugin_ = std::move(*plugin);
  }

  void TearDown() override {
    if (HasFailure() && plugin_) {
      std::cerr << "plugin log:\n" << plugin_->logs();
    }
    plugin_.reset();
    kubelet_.reset();
  }

  // `healthy` healthy IDs of `resource` on an open ListAndWatch stream, and `total` IDs in all
  // when total >= 0.
  bool waitForHealthy(const std::string& resource, int healthy, int total = -1) {
    return kubelet_->waitFor(
        [&](const KubeletView& v) {
          auto it = v.resources.find(resource);
          return it != v.resources.end() && it->second.streaming &&
                 it->second.healthyCount() == healthy &&
                 (total < 0 || static_cast<int>(it->second.devices.size()) == total);
        },
        deadline_);
  }

  // The device's uverbs node name ("uverbs3") as its sysfs directory lists it.
  std::string uverbsOf(const std::string& device) const {
    for (const auto& e : std::filesystem::directory_iterator(node_ + "/sys/class/infiniband/" +
                                                             device + "/device/infiniband_verbs")) {
      return e.path().filename();
    }
    return "";
  }

  const std::chrono::milliseconds deadline_;
  TempDir tmp_;
  std::string node_;
  std::string kubelet_dir_;
  std::string state_dir_;
  std::unique_ptr<KubeletSimulator> kubelet_;
  PluginProcessPtr plugin_;
};

} // namespace kube_rdma
