#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/util/clock.h"
#include "common/node/sysfs_discovery.h"
#include "plugin/pool_resource_manager.h"

namespace kube_rdma {

// The node's health now, from a known topology: port states re-read through readPortStates
// (vanished devices drop out), uverbs nodes looked up under dev_root.
NodeHealthView sampleNodeHealth(const NodeTopology& known, const std::string& sysfs_root,
                                const std::string& dev_root);

// Which uverbs nodes of `known` exist under dev_root.
std::set<std::string> presentUverbs(const NodeTopology& known, const std::string& dev_root);

// Re-reads health every `interval` on its own thread (sysfs attributes do not support inotify, so
// this is the one periodic read).
// Calls on_sample when the sample differs from the last one (or the topology was replaced) and
// on_device_set_changed when devices appear or vanish. Stops in the destructor.
class HealthWatcher {
public:
  using TopologyFn = std::function<std::shared_ptr<const NodeTopology>()>;
  HealthWatcher(ClockPtr clock, std::string sysfs_root, std::string dev_root,
                std::chrono::milliseconds interval, TopologyFn topology,
                std::function<void(const NodeHealthView&)> on_sample,
                std::function<void()> on_device_set_changed);
  ~HealthWatcher();

  // A reloaded config's period: the next sample is due one new interval after the last one (at
  // once if that is past).
  void setInterval(std::chrono::milliseconds interval);

private:
  void run();

  const ClockPtr clock_;
  const std::string sysfs_root_;
  const std::string dev_root_;
  PortStateFiles port_states_; // used by the watcher thread only
  const TopologyFn topology_;
  const std::function<void(const NodeHealthView&)> on_sample_;
  const std::function<void()> on_device_set_changed_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::chrono::milliseconds interval_; // guarded by mutex_, like the two flags
  bool interval_changed_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace kube_rdma
