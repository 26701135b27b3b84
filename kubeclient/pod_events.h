#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/util/clock.h"
#include "common/util/log.h"
#include "common/util/pod_warning.h"
#include "kubeclient/api_client.h"

// Warning Events on pods, what `kubectl describe pod` and `kubectl get events` show: the place a
// user looks first when a pod does not do what it should (docs/nri.md, "Events").
namespace kube_rdma {

// A core/v1 Event of type Warning about the warning's pod: one occurrence at `now`, from
// `component` on `node`. Named as the kubelet names its events, "<pod>.<time in hex
// nanoseconds>".
nlohmann::json podWarningEvent(const PodWarning& warning, const std::string& component,
                               const std::string& node, std::chrono::system_clock::time_point now);

// Posts them from a thread of its own, so that the caller (the NRI plugin, on the container
// runtime's path) never waits for the API server. A pod gets one event per reason: a container
// that restarts does not repeat it.
class PodEventRecorder {
public:
  PodEventRecorder(ApiClient& api, std::string component, std::string node, ClockPtr clock,
                   Logger& log);
  ~PodEventRecorder();
  PodEventRecorder(const PodEventRecorder&) = delete;
  PodEventRecorder& operator=(const PodEventRecorder&) = delete;

  // Returns at once. Past kMaxQueued waiting events the newest is dropped and logged: a node
  // cannot bury the API server in events.
  void warn(const PodWarning& warning);

  static constexpr size_t kMaxQueued = 64;

private:
  void run();

  ApiClient& api_;
  const std::string component_;
  const std::string node_;
  const ClockPtr clock_;
  Logger& log_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<PodWarning> queue_;
  std::set<std::pair<std::string, std::string>> sent_; // pod uid, reason
  bool stopping_ = false;
  std::thread thread_;
};

// A client of the API server with the pod's own service account, for a daemon that only posts
// events (the device plugin); nullptr, logged, where the pod has no token: its events are then
// left out and nothing else changes.
ApiClientPtr podEventsClient(const std::string& user_agent, Logger& log);

} // namespace kube_rdma
