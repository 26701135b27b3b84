#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/util/clock.h"
#include "common/node/device_model.h"
#include "common/util/log.h"
#include "common/pools/plugin_config.h"
#include "dra/dra_metrics.h"
#include "dra/resource_slice.h"
#include "kubeclient/api_client.h"
#include "kubeclient/backoff.h"
#include "kubeclient/informer.h"

namespace kube_rdma {

// What to do so that the node's slices in the API equal the wanted ones.
struct SliceChanges {
  int64_t generation = 0;             // the pool's generation after the changes
  std::vector<nlohmann::json> create; // whole objects
  std::vector<nlohmann::json> update; // listed objects with the wanted spec
  std::vector<std::string> remove;    // names
  bool empty() const { return create.empty() && update.empty() && remove.empty(); }
};

// Pairs the listed slices, by name, with the wanted ones (resourceSlicesFor's, in order):
// extras are removed (duplicates left by an earlier run too), missing ones created. When any
// spec differs but for pool.generation, or a slice is missing, every slice gets a generation
// above both the listed ones and `last_generation` (the scheduler only trusts a pool's newest
// generation); otherwise the listed generation stays.
SliceChanges planSliceChanges(const std::vector<nlohmann::ordered_json>& wanted,
                              const std::vector<nlohmann::json>& listed, int64_t last_generation);

struct SlicePublisherOptions {
  // Retries of the publisher's own writes (and of the Node's GET) when they fail.
  BackoffPolicy backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(2000), 2.0, 1.0};
  // The node's slices are watched (docs/dra.md "Publishing the slices"); this is the watch's.
  InformerOptions watch{{},
                        {std::chrono::milliseconds(500), std::chrono::milliseconds(2000), 2.0, 1.0},
                        std::chrono::seconds(300)};
  // What the devices offer beyond their attributes (shared ports).
  SliceOptions slices;
  // A new topology is published at once, then at most once per this interval: a port that flaps
  // costs one slice update per interval, carrying its latest state.
  std::chrono::milliseconds min_topology_interval{1500};
};

// How publishing is doing, for /readyz and logs.
struct PublishingState {
  // When the node's slices were last seen equal to the wanted ones; none yet: empty.
  std::optional<std::chrono::steady_clock::time_point> last_success;
  std::string last_error; // of the last write or watch failure; empty once all is well again
  InformerStatus watch;
};

// Keeps the node's ResourceSlices in the API equal to those of the latest topology handed to
// it, on a thread of its own, as the Kubernetes resourceslice controller does: the node's slices
// are watched (one LIST, then a WATCH), and a slice is written only when the watched ones differ
// from the wanted ones (a new topology, or someone else's change or delete), with jittered
// backoff while the API fails. docs/dra.md "Publishing the slices".
class SlicePublisher {
public:
  /** @param api, logger, metrics, clock not owned; must outlive the publisher. */
  SlicePublisher(ApiClient& api, std::string node_name, PluginConfig config, Logger& logger,
                 DraMetrics& metrics, const Clock& clock, SlicePublisherOptions options = {});
  ~SlicePublisher() { stop(); }
  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  void start(NodeTopology topology);
  // Publishes `topology` next; a topology equal to the last one changes nothing.
  void set(NodeTopology topology);
  void stop();

  PublishingState state() const;

private:
  void run();
  // The Node's uid, read once: the slices' ownerReference.
  Status readNodeUid();
  // Compares the watched slices with the wanted ones and writes the difference. True when it
  // created, updated or deleted a slice.
  Result<bool> reconcile(SliceSet wanted);
  // An API server without a feature the devices use (taints, consumable capacity: an older
  // Kubernetes, or the gate off) stores a slice without its fields: then the publisher stops
  // sending them, or it would rewrite the slice forever.
  void noticeDroppedFeatures(const nlohmann::json& sent, const nlohmann::json& stored);

  ApiClient& api_;
  const std::string node_name_;
  const PluginConfig config_;
  Logger& logger_;
  DraMetrics& metrics_;
  const Clock& clock_;
  const SlicePublisherOptions options_;
  std::string node_uid_;   // the publisher's thread only
  int64_t generation_ = 0; // last published; the publisher's thread only
  // The features the API server dropped, by their marking field; the publisher's thread only.
  std::set<std::string> dropped_features_;
  Informer slices_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<NodeTopology> topology_; // the newest one handed in
  bool wake_pending_ = false;            // set(), or the watched slices changed
  bool stopping_ = false;
  PublishingState state_;
  std::thread thread_;
};

} // namespace kube_rdma
