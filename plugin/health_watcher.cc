#include "plugin/health_watcher.h"

#include <map>

#include "common/node/sysfs_attributes.h"

namespace kube_rdma {

std::set<std::string> presentUverbs(const NodeTopology& known, const std::string& dev_root) {
  const auto listed = listDirectory(dev_root + "/infiniband");
  const std::set<std::string> nodes(listed.begin(), listed.end());
  std::set<std::string> present;
  for (const auto& device : known.devices) {
    if (!device.uverbs.empty() && nodes.count(device.uverbs) > 0) {
      present.insert(device.uverbs);
    }
  }
  return present;
}

namespace {

// The view built from samples and the uverbs nodes present.
NodeHealthView healthView(const NodeTopology& known, const std::vector<PortStateSample>& samples,
                          std::set<std::string> uverbs_present) {
  auto topology = std::make_shared<NodeTopology>(known);
  std::map<std::pair<std::string, uint32_t>, PortState> states;
  std::set<std::string> vanished;
  for (const auto& sample : samples) {
    if (!sample.present) {
      vanished.insert(sample.device);
    }
    states[{sample.device, sample.port}] = sample.state;
  }
  std::erase_if(topology->devices, [&](const RdmaDevice& d) { return vanished.count(d.name) > 0; });
  for (auto& device : topology->devices) {
    for (auto& port : device.ports) {
      auto it = states.find({device.name, port.number});
      port.state = it == states.end() ? PortState::kNop : it->second;
    }
  }
  return {std::move(topology), std::move(uverbs_present)};
}

} // namespace

NodeHealthView sampleNodeHealth(const NodeTopology& known, const std::string& sysfs_root,
                                const std::string& dev_root) {
  return healthView(known, readPortStates(sysfs_root, known), presentUverbs(known, dev_root));
}

HealthWatcher::HealthWatcher(ClockPtr clock, std::string sysfs_root, std::string dev_root,
                             std::chrono::milliseconds interval, TopologyFn topology,
                             std::function<void(const NodeHealthView&)> on_sample,
                             std::function<void()> on_device_set_changed)
    : clock_(std::move(clock)), sysfs_root_(std::move(sysfs_root)), dev_root_(std::move(dev_root)),
      port_states_(sysfs_root_), topology_(std::move(topology)), on_sample_(std::move(on_sample)),
      on_device_set_changed_(std::move(on_device_set_changed)), interval_(interval),
      thread_([this] { run(); }) {}

HealthWatcher::~HealthWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void HealthWatcher::setInterval(std::chrono::milliseconds interval) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (interval == interval_) {
      return;
    }
    interval_ = interval;
    interval_changed_ = true;
  }
  wake_.notify_all();
}

void HealthWatcher::run() {
  std::shared_ptr<const NodeTopology> last_known;
  std::vector<PortStateSample> last_samples;
  std::set<std::string> last_uverbs;
  auto last_sample = clock_->now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    // Due one interval after the last sample: a new interval moves the due time instead of
    // restarting the wait, so intervals changed faster than they elapse cannot starve sampling.
    if (clock_->waitUntil(lock, wake_, last_sample + interval_,
                          [this] { return stopping_ || interval_changed_; })) {
      if (stopping_) {
        return;
      }
      interval_changed_ = false;
      continue;
    }
    lock.unlock();
    last_sample = clock_->now();
    const auto known = topology_();
    std::set<std::string> names;
    for (const auto& d : known->devices) {
      names.insert(d.name);
    }
    const std::set<std::string> listed = listRdmaDeviceNames(sysfs_root_);
    if (listed != names) {
      on_device_set_changed_();
    }
    auto samples = port_states_.read(*known, listed);
    auto uverbs = presentUverbs(*known, dev_root_);
    // Idle nodes change nothing: no copy of the topology, no work in the pools.
    if (known != last_known || samples != last_samples || uverbs != last_uverbs) {
      on_sample_(healthView(*known, samples, uverbs));
      last_known = known;
      last_samples = std::move(samples);
      last_uverbs = std::move(uverbs);
    }
    lock.lock();
  }
}

} // namespace kube_rdma
