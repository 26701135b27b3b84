#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "common/util/clock.h"
#include "common/util/file_watcher.h"
#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/pools/plugin_config.h"
#include "plugin/device_plugin_service.h"
#include "plugin/flags.h"
#include "plugin/health_watcher.h"
#include "plugin/kubelet_registrar.h"
#include "common/labels/nfd_feature_writer.h"
#include "plugin/pool_resource_manager.h"
#include "plugin/state_writer.h"
#include "usage/unused_rdma.h"
#include "rpc/grpc_socket_server.h"
#include "rpc/plugin_watcher_registration.h"
#include "rpc/pod_resources_client.h"

namespace kube_rdma {

// Owns the pools: discovers the node, builds one ResourceManager + gRPC server per pool, keeps
// them registered with the kubelet, and reacts to what the watchers report, one event at a time
// on the thread that calls run():
//  - kubelet.sock created (kubelet restart) or one of our sockets deleted: re-create the missing
//    sockets and register again;
//  - config file changed: parse; keep the last good config on an error; rebuild only the pools
//    that changed;
//  - devices appeared or vanished: discover again and rebuild what changed.
// Health samples go straight to the pools from the HealthWatcher's thread. With
// --nfd-features-file, each turn also brings NFD's feature file up to date (labels changed by any
// of the above or by a port state, or the file half-way to its expiry). The node checks that
// /metrics serves are judged again when the config or the devices change, not per scrape.
class PluginManager {
public:
  PluginManager(PluginFlags flags, FileWatcher& watcher, Logger& logger, MetricsRegistry& metrics,
                ClockPtr clock);
  ~PluginManager();

  // Discovers, loads the config, serves every pool and starts watching. Registration happens in
  // run(), which must follow.
  Status start();
  // The event loop; returns once `stop` is requested, with every socket removed.
  void run(const std::stop_token& stop);

  std::string renderMetrics() const;
  Result<std::string> healthz() const;
  // What UnusedRdmaWatcher needs: the config's unusedRdmaAfterSeconds and, unless that is 0, each
  // pod's ports (PodResources) and their data counters now.
  UnusedRdmaWatcher::Sample unusedRdmaSample() const;

private:
  struct Pool {
    PoolResourceManagerPtr manager;
    std::unique_ptr<DevicePluginService> service;
    std::unique_ptr<PluginWatcherRegistration> watcher_registration;
    GrpcSocketServerPtr server;
    bool registered = false;
  };
  enum class Event {
    kKubeletStarted,
    kSocketDeleted,
    kConfigChanged,
    kDevicesChanged,
    kPortStatesChanged // only wakes the loop, which recomputes the NFD labels each turn
  };

  void post(Event event);
  Status applyConfig(const PluginConfig& config, std::shared_ptr<const NodeTopology> topology);
  Status serve(Pool& pool);
  void unserve(Pool& pool);
  // Called and returns with `lock` (on mutex_) held; releases it during the Register calls.
  void registerPending(std::unique_lock<std::mutex>& lock);
  void onKubeletStarted();
  void onSocketDeleted();
  void onConfigChanged();
  void onDevicesChanged();
  void onHealthSample(const NodeHealthView& view);
  std::string socketDir() const;
  bool kubeletSocketExists() const;
  Result<std::shared_ptr<const NodeTopology>> discover(const PluginConfig& config) const;
  // These four queue their file work for writeFiles.
  void writeTopologyState(const NodeTopology& topology);
  void writeCdiSpec(const NodePool& pool, const NodeTopology& topology);
  void removeCdiSpec(const std::string& resource);
  void writeNfdFeatures();
  // Called and returns with `lock` (on mutex_) held; releases it while writing.
  void writeFiles(std::unique_lock<std::mutex>& lock);
  // The flag when given, else the current config's value.
  std::chrono::milliseconds resendInterval() const;
  std::chrono::milliseconds healthInterval() const;

  const PluginFlags flags_;
  FileWatcher& watcher_;
  Logger& logger_;
  MetricsRegistry& metrics_;
  const ClockPtr clock_;
  const RegistrationMode mode_;
  const StateWriter state_;
  // Which pod holds which ID: read at each scrape and by unusedRdmaSample.
  mutable PodResourcesReader pod_resources_;
  std::unique_ptr<HealthWatcher> health_;
  // Only the event loop's thread uses them (in writeFiles), so they need no lock.
  std::unique_ptr<NfdFeatureWriter> nfd_;
  std::unique_ptr<GpuDirectReadiness> gpudirect_; // with nfd_

  mutable std::mutex mutex_; // guards everything below
  std::condition_variable_any events_changed_;
  std::set<Event> events_;
  PluginConfig config_;
  std::shared_ptr<const NodeTopology> topology_;
  ScrapedFamily node_checks_; // nodeCheckFamily() of topology_ and config_, with --metrics-address
  NodeHealthView last_health_;
  std::map<std::string, Pool> pools_; // by resource name
  std::vector<std::function<void()>> file_work_;
};

} // namespace kube_rdma
