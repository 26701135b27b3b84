#include "usage/unused_rdma.h"

#include <algorithm>
#include <set>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

std::string portName(const HcaPort& port) {
  return port.device + ":" + std::to_string(port.port);
}

} // namespace

std::vector<PodPortTraffic> podPortTraffic(const std::vector<ContainerHoldings>& held,
                                           const PortsOfFn& ports_of,
                                           const DataWordsFn& data_words) {
  std::map<std::pair<std::string, std::string>, std::map<std::string, HcaPort>> ports_by_pod;
  for (const auto& container : held) {
    auto& ports = ports_by_pod[{container.pod_namespace, container.pod}];
    for (const auto& port : ports_of(container)) {
      ports.emplace(portName(port), port);
    }
  }
  std::map<std::string, std::optional<uint64_t>> words; // by port: each read once
  std::vector<PodPortTraffic> out;
  for (const auto& [pod, ports] : ports_by_pod) {
    PodPortTraffic traffic{pod.first, pod.second, {}, 0};
    bool readable = !ports.empty();
    for (const auto& [name, port] : ports) {
      auto [it, first] = words.try_emplace(name);
      if (first) {
        it->second = data_words(port);
      }
      readable = readable && it->second.has_value();
      traffic.ports.push_back(name);
      traffic.data_words += it->second.value_or(0);
    }
    if (readable) {
      out.push_back(std::move(traffic));
    }
  }
  return out;
}

std::vector<PodPortTraffic> UnusedRdmaDetector::observe(TimePoint now, std::chrono::seconds after,
                                                        const std::vector<PodPortTraffic>& sample) {
  std::vector<PodPortTraffic> newly_flagged;
  std::set<std::pair<std::string, std::string>> present;
  for (const auto& pod : sample) {
    const std::pair<std::string, std::string> key{pod.pod_namespace, pod.pod_name};
    present.insert(key);
    Tracked& tracked = pods_.try_emplace(key, Tracked{now, pod}).first->second;
    if (tracked.first.ports != pod.ports) {
      // Not the pod first seen (a new one of the same name): start over.
      tracked = Tracked{now, pod};
      continue;
    }
    tracked.moved = tracked.moved || pod.data_words != tracked.first.data_words;
    if (!tracked.moved && !tracked.flagged && now - tracked.first_seen >= after) {
      tracked.flagged = true;
      newly_flagged.push_back(pod);
    }
  }
  std::erase_if(pods_, [&](const auto& entry) { return !present.contains(entry.first); });
  return newly_flagged;
}

std::vector<PodPortTraffic> UnusedRdmaDetector::flagged() const {
  std::vector<PodPortTraffic> out;
  for (const auto& [key, tracked] : pods_) {
    if (tracked.flagged && !tracked.moved) {
      out.push_back(tracked.first);
    }
  }
  return out;
}

PodWarning unusedRdmaWarning(const PodPortTraffic& pod, std::string uid,
                             std::chrono::seconds after) {
  return {pod.pod_namespace, pod.pod_name, std::move(uid), "RdmaGrantedNotUsed",
          "the pod has held RDMA ports " + joinStrings(pod.ports, ", ") + " for " +
              std::to_string(after.count()) +
              " s and none of them has sent or received a byte (their port_xmit_data and "
              "port_rcv_data did not move): NCCL has most likely fallen back to TCP sockets. "
              "Run `rdmactl doctor` in the pod, look for NET/IB in its NCCL_DEBUG=INFO output, "
              "or set NCCL_NET=IB to fail instead of falling back"};
}

UnusedRdmaWatcher::UnusedRdmaWatcher(ClockPtr clock, SampleFn sample, UidFn uid,
                                     PodWarningSink warn, MetricsRegistry& metrics, Logger& log)
    : clock_(std::move(clock)), sample_(std::move(sample)), uid_(std::move(uid)),
      warn_(std::move(warn)), metrics_(metrics), log_(log) {}

UnusedRdmaWatcher::~UnusedRdmaWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void UnusedRdmaWatcher::start() {
  thread_ = std::thread([this] { run(); });
}

std::chrono::milliseconds UnusedRdmaWatcher::checkOnce() {
  using std::chrono::milliseconds;
  const Sample sample = sample_();
  if (sample.after.count() == 0) {
    metrics_.clearGauge(kPodRdmaUnusedMetric.name);
    return std::chrono::seconds(30); // off: look at the config again later
  }
  if (sample.pods) {
    for (const auto& pod : detector_.observe(clock_->now(), sample.after, *sample.pods)) {
      const std::string uid = uid_ ? uid_(pod.pod_namespace, pod.pod_name) : "";
      log_.warn("granted RDMA, not using it",
                {{"pod", pod.pod_namespace + "/" + pod.pod_name},
                 {"ports", joinStrings(pod.ports, ",")},
                 {"event", uid.empty() ? "none (pod UID unknown)" : "RdmaGrantedNotUsed"}});
      if (!uid.empty() && warn_) {
        warn_(unusedRdmaWarning(pod, uid, sample.after));
      }
    }
    metrics_.clearGauge(kPodRdmaUnusedMetric.name);
    for (const auto& pod : detector_.flagged()) {
      metrics_
          .gauge(kPodRdmaUnusedMetric, {{"namespace", pod.pod_namespace}, {"pod", pod.pod_name}})
          .set(1);
    }
  }
  return std::clamp<milliseconds>(std::chrono::duration_cast<milliseconds>(sample.after) / 10,
                                  std::chrono::seconds(1), std::chrono::seconds(30));
}

void UnusedRdmaWatcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const auto wait = checkOnce();
    lock.lock();
    clock_->waitFor(lock, wake_, wait, [this] { return stopping_; });
  }
}

} // namespace kube_rdma
