#include "kubeclient/pod_events.h"

#include <cstdio>
#include <ctime>

namespace kube_rdma {
namespace {

// Past this many pods the memory of which pods got which event starts again; a pod may then get
// its event a second time, never unboundedly many.
constexpr size_t kMaxRemembered = 4096;

std::string rfc3339(std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

} // namespace

nlohmann::json podWarningEvent(const PodRef& pod, const std::string& reason,
                               const std::string& message, const std::string& component,
                               const std::string& node, std::chrono::system_clock::time_point now) {
  const auto nanoseconds =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanoseconds));
  const std::string at = rfc3339(now);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", pod.name + suffix}, {"namespace", pod.ns}}},
          {"involvedObject",
           {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"namespace", pod.ns},
            {"name", pod.name},
            {"uid", pod.uid}}},
          {"reason", reason},
          {"message", message},
          {"type", "Warning"},
          {"source", {{"component", component}, {"host", node}}},
          {"reportingComponent", component},
          {"reportingInstance", node},
          {"firstTimestamp", at},
          {"lastTimestamp", at},
          {"count", 1}};
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

void PodEventRecorder::warn(const PodRef& pod, const std::string& reason,
                            const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sent_.size() >= kMaxRemembered) {
      sent_.clear();
    }
    if (!sent_.insert({pod.uid, reason}).second) {
      return;
    }
    if (queue_.size() >= kMaxQueued) {
      log_.warn("too many pod events waiting for the API server: one dropped",
                {{"pod", pod.ns + "/" + pod.name}, {"reason", reason}});
      return;
    }
    queue_.push_back({pod, reason, message});
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
    const Pending event = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const auto object = podWarningEvent(event.pod, event.reason, event.message, component_, node_,
                                        clock_->wallNow());
    if (auto created = api_.create("/api/v1/namespaces/" + event.pod.ns + "/events", object);
        !created) {
      log_.warn("cannot post an event on the pod", {{"pod", event.pod.ns + "/" + event.pod.name},
                                                    {"reason", event.reason},
                                                    {"error", created.error().message}});
    }
    lock.lock();
  }
}

} // namespace kube_rdma
