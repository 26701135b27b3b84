#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/device_model.h"
#include "common/log.h"
#include "common/plugin_config.h"
#include "dra/dra_metrics.h"
#include "kubeclient/api_client.h"
#include "kubeclient/backoff.h"

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
  // How often the slices are listed to notice someone else's changes (the kubelet deletes a
  // node's slices when it starts).
  std::chrono::milliseconds resync{1000};
  BackoffPolicy backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(5000), 2.0};
};

// How the publisher's rounds went, for /healthz.
struct PublishingState {
  // When a round last succeeded (changes made or none needed); none yet: empty.
  std::optional<std::chrono::steady_clock::time_point> last_success;
  std::string last_error; // of the last round; empty when it succeeded
};

// Keeps the node's ResourceSlices in the API equal to those of the latest topology handed to
// it, on a thread of its own: at once after set(), every `resync` otherwise, with bounded
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

  // The generation last published; 0 before the first success.
  int64_t generation() const;
  PublishingState state() const;

private:
  void run();
  // One round: the Node's uid once, then LIST and apply planSliceChanges. True when it created,
  // updated or deleted a slice.
  Result<bool> reconcile(const NodeTopology& topology);

  ApiClient& api_;
  const std::string node_name_;
  const PluginConfig config_;
  Logger& logger_;
  DraMetrics& metrics_;
  const Clock& clock_;
  const SlicePublisherOptions options_;
  std::string node_uid_; // the publisher's thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<NodeTopology> topology_;
  bool changed_ = false;
  bool stopping_ = false;
  int64_t generation_ = 0;
  PublishingState state_;
  std::thread thread_;
};

} // namespace kube_rdma
