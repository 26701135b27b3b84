#include "plugin/health_watcher.h"

#include <dirent.h>
#include <sys/stat.h>

#include <map>

namespace kube_rdma {

NodeHealthView sampleNodeHealth(const NodeTopology& known, const std::string& sysfs_root,
                                const std::string& dev_root) {
  auto topology = std::make_shared<NodeTopology>(known);
  std::map<std::pair<std::string, uint32_t>, PortStateSample> samples;
  std::set<std::string> vanished;
  for (auto& sample : readPortStates(sysfs_root, known)) {
    if (!sample.present) {
      vanished.insert(sample.device);
    }
    samples[{sample.device, sample.port}] = sample;
  }
  std::erase_if(topology->devices, [&](const RdmaDevice& d) { return vanished.count(d.name) > 0; });
  NodeHealthView view;
  for (auto& device : topology->devices) {
    for (auto& port : device.ports) {
      auto it = samples.find({device.name, port.number});
      port.state = it == samples.end() ? PortState::kNop : it->second.state;
    }
    struct stat st {};
    const std::string node = dev_root + "/infiniband/" + device.uverbs;
    if (!device.uverbs.empty() && ::stat(node.c_str(), &st) == 0) {
      view.uverbs_present.insert(device.uverbs);
    }
  }
  view.topology = std::move(topology);
  return view;
}

std::set<std::string> listRdmaDeviceNames(const std::string& sysfs_root) {
  std::set<std::string> names;
  if (DIR* d = ::opendir((sysfs_root + "/class/infiniband").c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      if (entry->d_name[0] != '.') {
        names.insert(entry->d_name);
      }
    }
    ::closedir(d);
  }
  return names;
}

HealthWatcher::HealthWatcher(std::string sysfs_root, std::string dev_root,
                             std::chrono::milliseconds interval, TopologyFn topology,
                             std::function<void(const NodeHealthView&)> on_sample,
                             std::function<void()> on_device_set_changed)
    : sysfs_root_(std::move(sysfs_root)), dev_root_(std::move(dev_root)), interval_(interval),
      topology_(std::move(topology)), on_sample_(std::move(on_sample)),
      on_device_set_changed_(std::move(on_device_set_changed)), thread_([this] { run(); }) {}

HealthWatcher::~HealthWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void HealthWatcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    const auto known = topology_();
    std::set<std::string> names;
    for (const auto& d : known->devices) {
      names.insert(d.name);
    }
    if (listRdmaDeviceNames(sysfs_root_) != names) {
      on_device_set_changed_();
    }
    on_sample_(sampleNodeHealth(*known, sysfs_root_, dev_root_));
    lock.lock();
  }
}

} // namespace kube_rdma
