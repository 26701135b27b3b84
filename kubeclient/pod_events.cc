#include "kubeclient/pod_events.h"

#include <cstdio>

#include "kubeclient/kubeconfig.h"

namespace kube_rdma {
namespace {

// Past this many pods the memory of which pods got which event starts again; a pod may then get
// its event a second time, never unboundedly many.
constexpr size_t kMaxRemembered = 4096;

} // namespace

nlohmann::json podWarningEvent(const PodWarning& warning, const std::string& component,
                               const std::string& node, std::chrono::system_clock::time_point now) {
  const auto nanoseconds =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanoseconds));
  const std::string at = rfc3339Utc(now);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", warning.pod_name + suffix}, {"namespace", warning.pod_namespace}}},
          {"involvedObject",
           {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"namespace", warning.pod_namespace},
            {"name", warning.pod_name},
            {"uid", warning.pod_uid}}},
          {"reason", warning.reason},
          {"message", warning.message},
          {"type", "Warning"},
          {"source", {{"component", component}, {"host", node}}},
          {"reportingComponent", component},
          {"reportingInstance", node},
          {"firstTimestamp", at},
          {"lastTimestamp", at},
          {"count", 1}};
}

ApiClientPtr podEventsClient(const std::string& user_agent, Logger& log) {
  auto config = inClusterConfig("/", serviceEnvironmentFromProcess());
  if (!config) {
    log.info("no service account token: no events on pods", {{"reason", config.error().message}});
    return nullptr;
  }
  ClientOptions options;
  options.user_agent = user_agent;
  auto client = ApiClient::fromConfig(*config, options, std::make_shared<RealClock>());
  if (!client) {
    log.warn("cannot configure the API client: no events on pods",
             {{"error", client.error().message}});
    return nullptr;
  }
  return std::move(*client);
}

PodEventRecorder::PodEventRecorder(ApiClient& api, std::string component, std::string node,
                                   ClockPtr clock, Logger& log)
    : api_(api), component_(std::move(component)), node_(std::move(node)), clock_(std::move(clock)),
      log_(log), thread_([this] { run(); }) {}

PodEventRecorder::~PodEventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void PodEventRecorder::warn(const PodWarning& warning) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sent_.size() >= kMaxRemembered) {
      sent_.clear();
    }
    if (!sent_.insert({warning.pod_uid, warning.reason}).second) {
      return;
    }
    if (queue_.size() >= kMaxQueued) {
      log_.warn(
          "too many pod events waiting for the API server: one dropped",
          {{"pod", warning.pod_namespace + "/" + warning.pod_name}, {"reason", warning.reason}});
      return;
    }
    queue_.push_back(warning);
  }
  wake_.notify_one();
}

void PodEventRecorder::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) {
      return;
    }
    const PodWarning event = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const auto object = podWarningEvent(event, component_, node_, clock_->wallNow());
    if (auto created = api_.create("/api/v1/namespaces/" + event.pod_namespace + "/events", object);
        !created) {
      log_.warn("cannot post an event on the pod",
                {{"pod", event.pod_namespace + "/" + event.pod_name},
                 {"reason", event.reason},
                 {"error", created.error().message}});
    }
    lock.lock();
  }
}

} // namespace kube_rdma
