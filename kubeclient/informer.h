#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "common/util/clock.h"
#include "common/util/log.h"
#include "kubeclient/api_client.h"
#include "kubeclient/backoff.h"

namespace kube_rdma {

struct InformerOptions {
  ListOptions selectors; // which objects of the collection are kept
  BackoffPolicy backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(30000), 2.0, 1.0};
  // Each watch asks the server to end it after a random time between this and twice this, as
  // client-go's reflector does, so that the watches of a fleet do not all restart together.
  std::chrono::seconds min_watch_timeout{300};
};

// How the informer's connection to the API server is doing, for readiness and logs.
struct InformerStatus {
  bool synced = false;    // a LIST has succeeded: objects() is the server's state
  bool connected = false; // the last LIST or WATCH got an answer (a watch is open or opening)
  std::string last_error; // of the last failed LIST or WATCH, until one succeeds
  std::optional<std::chrono::steady_clock::time_point> disconnected_since;
};

// A local copy of the objects of one collection that match the selectors, kept by LIST once and
// then WATCH (with bookmarks, resumed from the last resourceVersion, LIST again on 410 Gone),
// as client-go's reflector keeps an informer's store. Failed requests are retried with jittered
// exponential backoff and never sooner than the server's Retry-After. `on_change` is called on
// the informer's thread after every change to the copy (and after each LIST). docs/kubeclient.md
// "Watching a collection".
class Informer {
public:
  using ChangeFn = std::function<void()>;

  /** @param api, logger, clock not owned; must outlive the informer. */
  Informer(ApiClient& api, std::string collection_path, InformerOptions options, Logger& logger,
           const Clock& clock, ChangeFn on_change);
  ~Informer() { stop(); }
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void start();
  void stop();

  // The objects by metadata.name (a cluster-scoped collection's names are unique).
  std::map<std::string, nlohmann::json> objects() const;
  InformerStatus status() const;

  // What the caller's own write answered, kept at once so that its next decision does not act
  // on the state before the write (the watch event follows). An event older than a remembered
  // write does not overwrite it.
  void remember(const nlohmann::json& object);
  void forget(const std::string& name);

private:
  void run();
  bool list();
  void watch();
  void apply(const std::string& type, const nlohmann::json& object);
  // Records and logs the failure, then sleeps out the backoff (or until stop()).
  void failed(const char* what, const ApiError& error);

  ApiClient& api_;
  const std::string collection_path_;
  const InformerOptions options_;
  Logger& logger_;
  const Clock& clock_;
  const ChangeFn on_change_;
  std::mt19937 random_{std::random_device{}()};
  std::string version_; // to watch from; the informer's thread only
  int failures_ = 0;    // in a row; the informer's thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, nlohmann::json> objects_;
  InformerStatus status_;
  WatchStop watch_stop_;
  std::thread thread_;
};

// Whether resourceVersion `a` is older than `b`. Kubernetes calls versions opaque, but every
// etcd-backed one is a decimal integer; anything else compares as not older.
bool olderVersion(const std::string& a, const std::string& b);

} // namespace kube_rdma
