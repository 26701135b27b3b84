// The plugin's shared state driven from many threads the way gRPC and the health watcher drive it,
// without gRPC: scripts/tsan.sh runs these under ThreadSanitizer (Debian's gRPC is not built
// with it, so the tests that go through gRPC cannot run there), scripts/test.sh under ASan.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/node/sysfs_discovery.h"
#include "plugin/health_watcher.h"
#include "plugin/pool_resource_manager.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

using std::chrono::milliseconds;

std::shared_ptr<const NodeTopology> discover(const std::string& node) {
  return std::make_shared<const NodeTopology>(discoverFromSysfs({node + "/sys", node + "/proc"}));
}

NodePool exclusivePool(const NodeTopology& topology) {
  PluginConfig config = defaultPluginConfig();
  for (auto& spec : config.pools) {
    spec.mode = PoolMode::kExclusive;
  }
  for (auto& p : buildPools(topology, config)) {
    if (p.spec.resource_name == "rdma/shared") {
      return p;
    }
  }
  return {};
}

NodeHealthView withPortDown(NodeHealthView view, const std::string& device) {
  auto topology = std::make_shared<NodeTopology>(*view.topology);
  for (auto& d : topology->devices) {
    if (d.name == device) {
      d.ports[0].state = PortState::kDown;
    }
  }
  view.topology = topology;
  return view;
}

size_t healthyCount(const DeviceList& list) {
  size_t n = 0;
  for (const auto& d : list.devices) {
    n += d.healthy ? 1 : 0;
  }
  return n;
}

// ListAndWatch streams: each waits for the next list and checks versions only move forward.
class Streams {
public:
  Streams(const PoolResourceManager& manager, int count) : seen_(count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, &manager, i](const std::stop_token& stop) {
        uint64_t seen = 0;
        while (!stop.stop_requested()) {
          const DeviceList list = manager.waitForChange(seen, milliseconds(100), stop);
          if (list.closed) {
            return;
          }
          if (list.version < seen) {
            backwards_.fetch_add(1);
          }
          seen = list.version;
          seen_[i].store(seen);
        }
      });
    }
  }
  // True once every stream has taken version `version` or a later one.
  bool allSaw(uint64_t version) const {
    for (const auto& s : seen_) {
      if (s.load() < version) {
        return false;
      }
    }
    return true;
  }
  int backwards() const { return backwards_.load(); }

private:
  std::vector<std::atomic<uint64_t>> seen_;
  std::atomic<int> backwards_{0};
  std::vector<std::jthread> threads_;
};

// Allocate calls for one ID after another until stopped: each is granted, or refused because the
// ID is unhealthy at that moment; anything else is counted as wrong.
class Allocations {
public:
  Allocations(PoolResourceManager& manager, const std::vector<std::string>& ids, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, &manager, ids, t](const std::stop_token& stop) {
        for (size_t i = t; !stop.stop_requested(); ++i) {
          const std::string& id = ids[i % ids.size()];
          const auto answer = manager.allocate({id});
          if (answer.ok() ? answer.value().devices.empty()
                          : answer.error().message.find("unhealthy device IDs [" + id + "]") ==
                                std::string::npos) {
            std::lock_guard<std::mutex> lock(mutex_);
            last_wrong_ = answer.ok() ? "granted with no device nodes" : answer.error().message;
            ++wrong_;
          }
          calls_.fetch_add(1);
        }
      });
    }
  }
  // Ends the calls: joins every thread.
  void stop() { threads_.clear(); }
  int calls() const { return calls_.load(); }
  // "" when every answer was right, else the count and the last wrong answer.
  std::string wrong() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return wrong_ == 0 ? "" : std::to_string(wrong_) + " wrong, the last: " + last_wrong_;
  }

private:
  std::atomic<int> calls_{0};
  mutable std::mutex mutex_;
  int wrong_ = 0;
  std::string last_wrong_;
  std::vector<std::jthread> threads_;
};

TEST(PluginConcurrency, StreamsAndAllocationsWhileHealthUpdates) {
  const std::string node = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";
  const auto topology = discover(node);
  TempDir state_dir;
  StateWriter state(state_dir.path());
  ASSERT_TRUE(state.prepare().ok());
  PoolResourceManager manager(exclusivePool(*topology), false, false, state);
  const NodeHealthView well = sampleNodeHealth(*topology, node + "/sys", node + "/dev");
  manager.update(well);
  std::vector<std::string> ids;
  for (const auto& d : manager.devices().devices) {
    ids.push_back(d.id);
  }
  ASSERT_EQ(ids.size(), 8u);

  uint64_t final_version = 0;
  {
    Streams streams(manager, 4);
    Allocations allocations(manager, ids, 2);
    for (int round = 0; round < 200; ++round) {
      const std::string down = "mlx5_" + std::to_string(1 + round % 8);
      manager.update(round % 2 == 0 ? withPortDown(well, down) : well);
      if (round % 50 == 0) {
        manager.resend();
      }
    }
    manager.update(well);
    final_version = manager.devices().version;
    EXPECT_TRUE(waitUntil([&] { return streams.allSaw(final_version); }, milliseconds(10000)));
    EXPECT_EQ(streams.backwards(), 0);
    EXPECT_TRUE(waitUntil([&] { return allocations.calls() >= 100; }, milliseconds(10000)));
    EXPECT_EQ(allocations.wrong(), "") << "of " << allocations.calls() << " Allocate calls";
    manager.close(); // ends the streams before their threads are joined
  }
  EXPECT_GT(final_version, 200u); // every flip changed the list
  EXPECT_EQ(healthyCount(manager.devices()), 8u);
}

// Rewrites a port's state file the way the kernel's value changes: readers see old or new.
void setPortState(const std::string& node, const std::string& device, const std::string& value) {
  const std::string path = node + "/sys/class/infiniband/" + device + "/ports/1/state";
  writeTestFile(path + ".new", value + "\n");
  std::filesystem::rename(path + ".new", path);
}

// The part of the fixture the health watcher reads (class/infiniband/<dev>/ports/<n>/state and
// the uverbs nodes), copied file by file: a copy of the whole tree takes seconds to remove here.
void copyHealthFiles(const NodeTopology& topology, const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  for (const auto& device : topology.devices) {
    for (const auto& port : device.ports) {
      // Inside the fixture's tree, never the host's.
      const std::string dir =
          "sys/class/infiniband/" + device.name + "/ports/" + std::to_string(port.number);
      fs::create_directories(to + "/" + dir);
      fs::copy_file(from + "/" + dir + "/state", to + "/" + dir + "/state");
    }
    fs::create_directories(to + "/dev/infiniband");
    fs::copy_file(from + "/dev/infiniband/" + device.uverbs,
                  to + "/dev/infiniband/" + device.uverbs);
  }
}

TEST(PluginConcurrency, HealthWatcherThreadWhileIntervalsAndPortsChange) {
  std::shared_ptr<const NodeTopology> topology =
      discover(std::string(KUBE_RDMA_FIXTURES) + "/a100-roce");
  TempDir tmp;
  const std::string node = tmp.path() + "/node";
  copyHealthFiles(*topology, std::string(KUBE_RDMA_FIXTURES) + "/a100-roce", node);
  StateWriter state(tmp.path() + "/state");
  ASSERT_TRUE(state.prepare().ok());
  PoolResourceManager manager(exclusivePool(*topology), false, false, state);
  manager.update(sampleNodeHealth(*topology, node + "/sys", node + "/dev"));
  std::vector<std::string> ids;
  for (const auto& d : manager.devices().devices) {
    ids.push_back(d.id);
  }

  std::atomic<int> device_set_changes{0};
  auto healthy = [&] { return healthyCount(manager.devices()); };
  {
    Streams streams(manager, 2);
    Allocations allocations(manager, ids, 1);
    HealthWatcher watcher(
        std::make_shared<RealClock>(), node + "/sys", node + "/dev", milliseconds(10),
        [&] { return topology; }, [&](const NodeHealthView& view) { manager.update(view); },
        [&] { device_set_changes.fetch_add(1); });
    std::jthread intervals([&](const std::stop_token& stop) {
      for (int i = 0; !stop.stop_requested(); ++i) {
        watcher.setInterval(milliseconds(i % 2 == 0 ? 5 : 15));
        std::this_thread::sleep_for(milliseconds(3));
      }
    });
    for (int flap = 0; flap < 5; ++flap) {
      setPortState(node, "mlx5_3", "1: DOWN");
      EXPECT_TRUE(waitUntil([&] { return healthy() == 7; }, milliseconds(5000))) << flap;
      setPortState(node, "mlx5_3", "4: ACTIVE");
      EXPECT_TRUE(waitUntil([&] { return healthy() == 8; }, milliseconds(5000))) << flap;
    }
    allocations.stop(); // a vanished device's ID is refused as unknown, not as unhealthy
    EXPECT_EQ(allocations.wrong(), "") << "of " << allocations.calls() << " Allocate calls";
    const std::string entry = node + "/sys/class/infiniband/mlx5_5";
    std::filesystem::rename(entry, entry + ".away");
    EXPECT_TRUE(waitUntil([&] { return device_set_changes.load() > 0; }, milliseconds(5000)));
    intervals.request_stop();
    manager.close();
  } // the interval thread is joined first, then the watcher stops its own
}

} // namespace
} // namespace kube_rdma
