#include "kubeclient/informer.h"

#include <cstdint>
#include <utility>

#include "common/util/json_members.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

// A watch that ends this soon without an event counts as failed: a server (or proxy) that closes
// streams at once must not be asked again in a tight loop.
constexpr std::chrono::seconds kShortestHealthyWatch{1};

} // namespace

bool olderVersion(const std::string& a, const std::string& b) {
  const std::optional<uint64_t> first = parseWhole<uint64_t>(a);
  const std::optional<uint64_t> second = parseWhole<uint64_t>(b);
  return first && second && *first < *second;
}

Informer::Informer(ApiClient& api, std::string collection_path, InformerOptions options,
                   Logger& logger, const Clock& clock, ChangeFn on_change)
    : api_(api), collection_path_(std::move(collection_path)), options_(std::move(options)),
      logger_(logger), clock_(clock), on_change_(std::move(on_change)) {}

void Informer::start() {
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  watch_stop_.stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::map<std::string, json> Informer::objects() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return objects_;
}

InformerStatus Informer::status() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void Informer::remember(const json& object) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::string name = metadataString(object, "name");
  if (!name.empty()) {
    objects_[name] = object;
  }
}

void Informer::forget(const std::string& name) {
  const std::lock_guard<std::mutex> lock(mutex_);
  objects_.erase(name);
}

void Informer::run() {
  bool listed = false;
  while (true) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        return;
      }
    }
    if (!listed) {
      listed = list();
      continue; // list() waited out its own backoff
    }
    watch();
    const std::lock_guard<std::mutex> lock(mutex_);
    listed = !version_.empty();
  }
}

bool Informer::list() {
  ApiResult<ObjectList> listed = api_.list(collection_path_, options_.selectors);
  if (!listed) {
    failed("listing", listed.error());
    return false;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, json> objects;
    for (json& object : listed->items) {
      const std::string name = metadataString(object, "name");
      objects[name] = std::move(object);
    }
    // A write of ours that the list does not include yet stays (its event follows the list).
    for (auto& [name, object] : objects_) {
      const std::string version = resourceVersionOf(object);
      const auto in_list = objects.find(name);
      if (in_list == objects.end() ? olderVersion(listed->resource_version, version)
                                   : olderVersion(resourceVersionOf(in_list->second), version)) {
        objects[name] = std::move(object);
      }
    }
    objects_ = std::move(objects);
    version_ = listed->resource_version;
    failures_ = 0;
    status_.synced = true;
    status_.connected = true;
    status_.last_error.clear();
    status_.disconnected_since.reset();
  }
  on_change_();
  return true;
}

void Informer::watch() {
  WatchOptions options;
  options.field_selector = options_.selectors.field_selector;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    options.resource_version = version_;
    std::uniform_int_distribution<long long> spread(0, options_.min_watch_timeout.count());
    options.timeout_seconds =
        static_cast<int>(options_.min_watch_timeout.count() + spread(random_));
  }
  const auto began = clock_.now();
  bool saw_event = false;
  ApiResult<std::string> ended = api_.watch(
      collection_path_, options,
      [&](const WatchEvent& event) {
        saw_event = true;
        apply(event.type, event.object);
        on_change_();
      },
      watch_stop_);
  if (ended) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!ended->empty()) {
      version_ = *ended;
    }
    if (saw_event || clock_.now() - began >= kShortestHealthyWatch || stopping_) {
      failures_ = 0;
      status_.connected = true;
      status_.last_error.clear();
      status_.disconnected_since.reset();
      return;
    }
  }
  if (!ended && ended.error().code == 410) {
    // The server no longer has the changes since our version (compacted): start over.
    logger_.info("the watch's resourceVersion is too old; listing again",
                 {{"collection", collection_path_}});
    const std::lock_guard<std::mutex> lock(mutex_);
    version_.clear();
    return;
  }
  failed("watching", ended
                         ? ApiError{200, "", "the server ended the watch at once, without an event"}
                         : ended.error());
}

void Informer::apply(const std::string& type, const json& object) {
  const std::string name = metadataString(object, "name");
  const std::lock_guard<std::mutex> lock(mutex_);
  if (const std::string version = resourceVersionOf(object); !version.empty()) {
    version_ = version;
  }
  const auto held = objects_.find(name);
  if (held != objects_.end() &&
      olderVersion(resourceVersionOf(object), resourceVersionOf(held->second))) {
    return; // an event from before a write of ours that remember() already holds
  }
  if (type == "DELETED") {
    objects_.erase(name);
  } else if (type == "ADDED" || type == "MODIFIED") {
    objects_[name] = object;
  }
}

void Informer::failed(const char* what, const ApiError& error) {
  std::chrono::milliseconds delay;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      return;
    }
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    delay = retryDelay(options_.backoff, failures_++, error, uniform(random_));
    status_.connected = false;
    status_.last_error = std::string(what) + " " + collection_path_ + ": " + describe(error);
    if (!status_.disconnected_since) {
      status_.disconnected_since = clock_.now();
    }
  }
  logger_.warn("the API server did not answer as expected; retrying",
               {{"request", std::string(what) + " " + collection_path_},
                {"error", describe(error)},
                {"retry_in_ms", std::to_string(delay.count())}});
  std::unique_lock<std::mutex> lock(mutex_);
  clock_.waitFor(lock, wake_, delay, [this] { return stopping_; });
}

} // namespace kube_rdma
