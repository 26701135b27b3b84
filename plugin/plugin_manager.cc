#include "plugin/plugin_manager.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <optional>
#include <utility>

#include "common/util/clock.h"
#include "common/pools/hook_outcomes.h"
#include "common/node/verbs_discovery.h"
#include "plugin/cdi_spec.h"
#include "common/checks/node_checks.h"
#include "common/checks/node_snapshot.h"
#include "plugin/plugin_metrics.h"
#include "plugin/pod_ports.h"
#include "usage/port_counters.h"
#include "plugin/topology_json.h"

namespace kube_rdma {
namespace {

constexpr auto kRegisterTimeout = std::chrono::seconds(5);
constexpr auto kRegisterRetry = std::chrono::seconds(1);

// Only the "agreed" NCCL_IB_GID_INDEX mode needs the GID tables, and of each RoCE port's table
// only the entries up to the one NCCL's rule picks (libibverbs reads them whole in one call
// anyway).
GidScan gidScanFor(const PluginConfig& config) {
  GidScan scan{GidTables::kFirstOnly, {}};
  for (const PoolSpec& pool : config.pools) {
    if (pool.nccl.gid_index_mode == GidIndexMode::kAgreed) {
      scan.tables = GidTables::kUntilSelected;
      scan.selecting.push_back(pool.nccl.gid_policy);
    }
  }
  return scan;
}

size_t healthyCount(const DeviceList& list) {
  return std::count_if(list.devices.begin(), list.devices.end(),
                       [](const PluginDevice& d) { return d.healthy; });
}

} // namespace

PluginManager::PluginManager(PluginFlags flags, FileWatcher& watcher, Logger& logger,
                             MetricsRegistry& metrics, ClockPtr clock)
    : flags_(std::move(flags)), watcher_(watcher), logger_(logger), metrics_(metrics),
      clock_(std::move(clock)), mode_(chooseRegistrationMode(flags_.plugin_registry_dir)),
      state_(flags_.state_dir), pod_resources_(flags_.pod_resources_socket, logger_, [this] {
        metrics_.counter(plugin_metrics::kPodResourcesErrors).inc();
      }) {
  // Counters that exist from the start, so that increase() and alerts see their first rise.
  metrics_.counter(plugin_metrics::kConfigReloads, {{"outcome", "ok"}});
  metrics_.counter(plugin_metrics::kConfigReloads, {{"outcome", "error"}});
  metrics_.counter(plugin_metrics::kPodResourcesErrors);
  if (!flags_.nfd_features_file.empty()) {
    nfd_ = std::make_unique<NfdFeatureWriter>(flags_.nfd_features_file, flags_.nfd_features_ttl,
                                              clock_);
    gpudirect_ = std::make_unique<GpuDirectReadiness>(
        [roots = DiscoveryRoots{flags_.sysfs_root, flags_.proc_root, flags_.dev_root}](
            const NodeTopology& topology) { return gpuDirectReady(topology, roots); },
        gpuDirectRecheckInterval(flags_.nfd_features_ttl), clock_);
  }
}

PluginManager::~PluginManager() {
  health_.reset(); // its thread calls into the pools
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, pool] : pools_) {
    unserve(pool);
  }
}

std::string PluginManager::socketDir() const {
  return mode_ == RegistrationMode::kPluginWatcher ? flags_.plugin_registry_dir
                                                   : flags_.device_plugin_dir;
}

bool PluginManager::kubeletSocketExists() const {
  std::error_code ec;
  return std::filesystem::exists(flags_.device_plugin_dir + "/" + kKubeletSocketName, ec);
}

void PluginManager::post(Event event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.insert(event);
  }
  events_changed_.notify_all();
}

Status PluginManager::start() {
  if (auto status = state_.prepare(); !status) {
    return status;
  }
  auto config = loadPluginConfig(flags_.config_path);
  if (!config) {
    return config.error(); // at start there is no last good config to keep
  }
  auto discovered = discover(*config);
  if (!discovered) {
    return discovered.error();
  }
  auto topology = std::move(*discovered);
  for (const auto& warning : topology->warnings) {
    logger_.warn("discovery skipped an entry",
                 {{"path", warning.path}, {"error", warning.message}});
  }
  logger_.info("node discovered", {{"devices", std::to_string(topology->devices.size())},
                                   {"management_netdev", topology->management_netdev},
                                   {"registration_mode", toString(mode_)},
                                   {"node", flags_.node_name}});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto status = applyConfig(*config, topology); !status) {
      return status;
    }
  }
  // Watches: the kubelet's socket directory (restarts, our sockets wiped), the config file.
  auto status = watcher_.watchDirectory(flags_.device_plugin_dir, [this](const DirectoryEvent& e) {
    if (e.kind == DirectoryEvent::Kind::kCreated && e.name == kKubeletSocketName) {
      post(Event::kKubeletStarted);
    } else if (e.kind == DirectoryEvent::Kind::kDeleted && e.name != kKubeletSocketName) {
      post(Event::kSocketDeleted);
    }
  });
  if (!status) {
    return makeError("cannot watch --device-plugin-dir: " + status.error().message);
  }
  if (mode_ == RegistrationMode::kPluginWatcher) {
    status = watcher_.watchDirectory(flags_.plugin_registry_dir, [this](const DirectoryEvent& e) {
      if (e.kind == DirectoryEvent::Kind::kDeleted) {
        post(Event::kSocketDeleted);
      }
    });
    if (!status) {
      return makeError("cannot watch --plugin-registry-dir: " + status.error().message);
    }
  }
  if (!flags_.config_path.empty()) {
    status = watcher_.watchFile(flags_.config_path, [this] { post(Event::kConfigChanged); });
    if (!status) {
      return makeError("cannot watch --config: " + status.error().message);
    }
  }
  health_ = std::make_unique<HealthWatcher>(
      clock_, flags_.sysfs_root, flags_.dev_root, healthInterval(),
      [this] {
        std::lock_guard<std::mutex> lock(mutex_);
        return topology_;
      },
      [this](const NodeHealthView& view) { onHealthSample(view); },
      [this] { post(Event::kDevicesChanged); });
  return Ok{};
}

Status PluginManager::applyConfig(const PluginConfig& config,
                                  std::shared_ptr<const NodeTopology> topology) {
  auto wanted = buildPools(*topology, config);
  // A pool that takes nothing on this node is not offered: the kubelet gets no empty resource.
  std::erase_if(wanted, [](const NodePool& p) { return p.hcas.empty(); });
  config_ = config; // before serving: the streams take their re-send interval from it
  const NodeHealthView health = sampleNodeHealth(*topology, flags_.sysfs_root, flags_.dev_root);
  std::set<std::string> keep;
  for (auto& node_pool : wanted) {
    const std::string name = node_pool.spec.resource_name;
    keep.insert(name);
    // Also for an unchanged pool: the spec carries the config's memlock settings too.
    writeCdiSpec(node_pool, *topology);
    const bool gid_per_container =
        flags_.cdi && resolvesGidPerContainer(config.nccl_hook, node_pool.spec.nccl);
    auto it = pools_.find(name);
    if (it != pools_.end() && it->second.manager->pool() == node_pool &&
        it->second.manager->gidPerContainer() == gid_per_container) {
      // Unchanged: keeps its socket, registration and streams; a new re-send interval applies to
      // the streams after one send now (they may be waiting out the old, longer one).
      Pool& kept = it->second;
      if (kept.service && kept.service->setResendInterval(resendInterval())) {
        kept.manager->resend();
      }
      continue;
    }
    if (it != pools_.end()) {
      logger_.info("pool changed, re-creating it", {{"resource", name}});
      unserve(it->second);
      pools_.erase(it);
    }
    Pool pool;
    pool.manager =
        std::make_shared<PoolResourceManager>(node_pool, flags_.cdi, gid_per_container, state_);
    pool.manager->update(health);
    if (auto status = serve(pool); !status) {
      return status;
    }
    logger_.info("pool serving",
                 {{"resource", name},
                  {"mode", node_pool.spec.mode == PoolMode::kExclusive ? "exclusive" : "shared"},
                  {"hcas", std::to_string(node_pool.hcas.size())},
                  {"socket", pool.server->socketPath()}});
    pools_.emplace(name, std::move(pool));
  }
  for (auto it = pools_.begin(); it != pools_.end();) {
    if (keep.count(it->first)) {
      ++it;
      continue;
    }
    logger_.info("pool removed", {{"resource", it->first}});
    removeCdiSpec(it->first);
    unserve(it->second);
    it = pools_.erase(it);
  }
  // The node checks read many files: judged once per topology or config, not per scrape or
  // sample, like `rdmactl doctor` (without running ofed_info); only /metrics shows them.
  const DiscoveryRoots roots{flags_.sysfs_root, flags_.proc_root, flags_.dev_root};
  if (!flags_.metrics_address.empty()) {
    const NodeSnapshot snapshot = readNodeSnapshot(roots, *topology, {loadedLibibverbs(), {}, {}});
    node_checks_ = nodeCheckFamily(runNodeChecks(*topology, config, snapshot));
  }
  topology_ = std::move(topology);
  last_health_ = health;
  return Ok{};
}

Status PluginManager::serve(Pool& pool) {
  const std::string resource = pool.manager->resourceName();
  const std::string socket = socketDir() + "/" + poolSocketName(resource);
  pool.service =
      std::make_unique<DevicePluginService>(*pool.manager, resendInterval(), logger_, metrics_);
  std::vector<grpc::Service*> services{pool.service.get()};
  if (mode_ == RegistrationMode::kPluginWatcher) {
    pool.watcher_registration = std::make_unique<PluginWatcherRegistration>(
        PluginWatcherInfo{"DevicePlugin", resource, socket, {kDevicePluginApiVersion}}, "pool",
        logger_);
    services.push_back(pool.watcher_registration.get());
  }
  auto server = GrpcSocketServer::start(socket, services);
  if (!server) {
    return server.error();
  }
  pool.server = std::move(*server);
  // In plugin-watcher mode the kubelet finds the socket itself: serving is registering.
  pool.registered = mode_ == RegistrationMode::kPluginWatcher;
  return Ok{};
}

void PluginManager::unserve(Pool& pool) {
  if (pool.service) {
    pool.service->stop();
  }
  pool.server.reset();
  pool.service.reset();
  pool.watcher_registration.reset();
  pool.registered = false;
}

void PluginManager::registerPending(std::unique_lock<std::mutex>& lock) {
  if (mode_ != RegistrationMode::kClassic || !kubeletSocketExists()) {
    return; // the kubelet.sock creation event brings us back
  }
  struct Attempt {
    RegistrationRequest request;
    bool ok = false;
  };
  std::vector<Attempt> attempts;
  for (auto& [name, pool] : pools_) {
    if (!pool.registered && pool.server) {
      attempts.push_back(
          {{name, poolSocketName(name), pool.manager->preferredAllocationAvailable()}});
    }
  }
  // Register is a round trip to the kubelet (up to kRegisterTimeout): health samples, metrics
  // scrapes and watcher events must not wait for it. Only this thread changes pools_, so nothing
  // that was read above changes meanwhile; events posted now are handled on the next turn.
  lock.unlock();
  for (auto& attempt : attempts) {
    const std::string& name = attempt.request.resource_name;
    const auto started = clock_->now();
    auto status = registerWithKubelet(flags_.device_plugin_dir, attempt.request, kRegisterTimeout);
    metrics_
        .counter(plugin_metrics::kRegistrations,
                 {{"resource", name}, {"outcome", status ? "ok" : "error"}})
        .inc();
    if (!status) {
      logger_.warn("registration failed, retrying",
                   {{"resource", name}, {"error", status.error().message}});
      continue;
    }
    attempt.ok = true;
    const std::chrono::duration<double, std::milli> ms = clock_->now() - started;
    logger_.info("registered with the kubelet", {{"resource", name},
                                                 {"mode", toString(mode_)},
                                                 {"register_ms", std::to_string(ms.count())}});
  }
  lock.lock();
  for (const auto& attempt : attempts) {
    if (attempt.ok) {
      pools_.at(attempt.request.resource_name).registered = true;
    }
  }
}

void PluginManager::onKubeletStarted() {
  logger_.info("kubelet.sock created: registering again");
  for (auto& [name, pool] : pools_) {
    pool.registered = mode_ == RegistrationMode::kPluginWatcher;
  }
  onSocketDeleted(); // the kubelet wiped our sockets before creating its own
}

void PluginManager::onSocketDeleted() {
  for (auto& [name, pool] : pools_) {
    if (pool.server && pool.server->socketPresent()) {
      continue; // an event for a socket we already replaced
    }
    logger_.info("socket gone, serving it again", {{"resource", name}});
    unserve(pool);
    if (auto status = serve(pool); !status) {
      logger_.error("cannot serve pool", {{"resource", name}, {"error", status.error().message}});
    }
  }
}

void PluginManager::onConfigChanged() {
  auto config = loadPluginConfig(flags_.config_path);
  if (!config) {
    metrics_.counter(plugin_metrics::kConfigReloads, {{"outcome", "error"}}).inc();
    logger_.error("config rejected, keeping the last good one",
                  {{"error", config.error().message}});
    return;
  }
  if (*config == config_) {
    return; // a ConfigMap swap with the same content, or a duplicate event
  }
  auto topology = topology_;
  if (gidScanFor(*config) != gidScanFor(config_)) {
    auto discovered = discover(*config); // the new config reads other parts of the GID tables
    if (!discovered) {
      metrics_.counter(plugin_metrics::kConfigReloads, {{"outcome", "error"}}).inc();
      logger_.error("config not applied: discovery failed, keeping the last good config",
                    {{"error", discovered.error().message}});
      return;
    }
    topology = std::move(*discovered);
  }
  if (auto status = applyConfig(*config, topology); !status) {
    metrics_.counter(plugin_metrics::kConfigReloads, {{"outcome", "error"}}).inc();
    logger_.error("config could not be applied", {{"error", status.error().message}});
    return;
  }
  health_->setInterval(healthInterval());
  metrics_.counter(plugin_metrics::kConfigReloads, {{"outcome", "ok"}}).inc();
  logger_.info("config reloaded", {{"pools", std::to_string(pools_.size())}});
}

Result<std::shared_ptr<const NodeTopology>>
PluginManager::discover(const PluginConfig& config) const {
  auto topology = discoverNode({flags_.sysfs_root, flags_.proc_root}, flags_.discovery, logger_,
                               gidScanFor(config));
  if (!topology) {
    return topology.error();
  }
  return std::make_shared<const NodeTopology>(std::move(*topology));
}

void PluginManager::onDevicesChanged() {
  auto discovered = discover(config_);
  if (!discovered) {
    logger_.error("RDMA devices changed but discovery failed, keeping the last view",
                  {{"error", discovered.error().message}});
    return;
  }
  auto topology = std::move(*discovered);
  logger_.info("RDMA devices changed, rediscovered",
               {{"devices", std::to_string(topology->devices.size())}});
  writeTopologyState(*topology);
  if (auto status = applyConfig(config_, topology); !status) {
    logger_.error("pools could not be rebuilt", {{"error", status.error().message}});
  }
}

void PluginManager::onHealthSample(const NodeHealthView& view) {
  std::unique_lock<std::mutex> lock(mutex_);
  last_health_ = view;
  if (nfd_) {
    // The labels count ACTIVE ports: the event loop recomputes them.
    events_.insert(Event::kPortStatesChanged);
  }
  for (auto& [name, pool] : pools_) {
    if (pool.manager->update(view)) {
      const auto list = pool.manager->devices();
      logger_.info("device health changed", {{"resource", name},
                                             {"healthy", std::to_string(healthyCount(list))},
                                             {"total", std::to_string(list.devices.size())}});
    }
  }
  lock.unlock();
  if (nfd_) {
    events_changed_.notify_all();
  }
}

void PluginManager::run(const std::stop_token& stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  writeFiles(lock); // the CDI specs, before the kubelet can allocate
  registerPending(lock);
  writeTopologyState(*topology_); // after registering: nothing waits for it
  writeNfdFeatures();
  writeFiles(lock);
  while (!stop.stop_requested()) {
    const bool pending = std::any_of(pools_.begin(), pools_.end(),
                                     [](const auto& p) { return !p.second.registered; });
    // Waits for an event; while a registration is pending and the kubelet's socket exists,
    // retries once a second (a kubelet that is up but not answering yet); with NFD labels, until
    // their file is due to be rewritten at the latest.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (pending && mode_ == RegistrationMode::kClassic && kubeletSocketExists()) {
      deadline = clock_->now() + kRegisterRetry;
    }
    if (nfd_) {
      const auto due = std::min(nfd_->refreshDue(), gpudirect_->due());
      deadline = deadline ? std::min(*deadline, due) : due;
    }
    if (deadline) {
      events_changed_.wait_until(lock, stop, *deadline, [this] { return !events_.empty(); });
    } else {
      events_changed_.wait(lock, stop, [this] { return !events_.empty(); });
    }
    const std::set<Event> events = std::exchange(events_, {});
    if (events.count(Event::kConfigChanged)) {
      onConfigChanged();
    }
    if (events.count(Event::kDevicesChanged)) {
      onDevicesChanged();
    }
    if (events.count(Event::kKubeletStarted)) {
      onKubeletStarted();
    } else if (events.count(Event::kSocketDeleted)) {
      onSocketDeleted();
    }
    writeNfdFeatures();
    writeFiles(lock);
    if (!stop.stop_requested()) {
      registerPending(lock);
    }
  }
  for (auto& [name, pool] : pools_) {
    pool.manager->close();
    unserve(pool);
  }
  logger_.info("stopped: sockets removed");
}

std::chrono::milliseconds PluginManager::resendInterval() const {
  // Never zero: a zero wait would turn every stream into a busy loop.
  return std::max(
      std::chrono::milliseconds(100),
      flags_.resend_interval.value_or(std::chrono::seconds(config_.resend_interval_seconds)));
}

std::chrono::milliseconds PluginManager::healthInterval() const {
  return flags_.health_interval.value_or(std::chrono::milliseconds(config_.health_poll_ms));
}

void PluginManager::writeCdiSpec(const NodePool& pool, const NodeTopology& topology) {
  if (!flags_.cdi) {
    return;
  }
  file_work_.push_back([this, path = cdiSpecPath(flags_.cdi_dir, pool.spec.resource_name),
                        json = cdiSpecJson(pool, topology, config_.memlock, config_.nccl_hook)] {
    std::error_code ec;
    std::filesystem::create_directories(flags_.cdi_dir, ec);
    if (auto status = writeFileAtomically(path, json); !status) {
      logger_.warn("cannot write CDI spec", {{"path", path}, {"error", status.error().message}});
    }
  });
}

void PluginManager::removeCdiSpec(const std::string& resource) {
  if (!flags_.cdi) {
    return;
  }
  file_work_.push_back([this, path = cdiSpecPath(flags_.cdi_dir, resource)] {
    std::error_code ec;
    if (!std::filesystem::remove(path, ec) && ec) {
      logger_.warn("cannot remove CDI spec", {{"path", path}, {"error", ec.message()}});
    }
  });
}

void PluginManager::writeTopologyState(const NodeTopology& topology) {
  file_work_.push_back([this, json = topologyToJson(topology)] {
    if (auto status = state_.writeTopology(json); !status) {
      logger_.warn("cannot write topology state", {{"error", status.error().message}});
    }
  });
}

void PluginManager::writeNfdFeatures() {
  if (!nfd_) {
    return;
  }
  std::vector<NodePool> pools;
  for (const auto& [name, pool] : pools_) {
    pools.push_back(pool.manager->pool());
  }
  // The health view's topology has the port states of the last sample.
  auto topology = last_health_.topology ? last_health_.topology : topology_;
  file_work_.push_back([this, topology = std::move(topology), pools = std::move(pools)] {
    // The writer skips the write when the labels are the same and the file is not due.
    auto written = nfd_->update(nodeLabels(*topology, pools, gpudirect_->ready(*topology)));
    if (!written) {
      logger_.warn("cannot write the NFD features file",
                   {{"path", nfd_->path()}, {"error", written.error().message}});
    } else if (*written) {
      logger_.debug("NFD features file written", {{"path", nfd_->path()}});
    }
  });
}

void PluginManager::writeFiles(std::unique_lock<std::mutex>& lock) {
  const auto work = std::exchange(file_work_, {});
  // fsync takes milliseconds: health samples, /metrics and /healthz must not wait for it. Only
  // this thread queues file work, so the files are written in the order they were queued.
  lock.unlock();
  for (const auto& write : work) {
    write();
  }
  lock.lock();
}

std::string PluginManager::renderMetrics() const {
  // Before the lock: the kubelet answers in milliseconds, which Allocate must not wait for.
  const auto held = pod_resources_.read();
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_.clearGauge(plugin_metrics::kDevices.name);
  for (const auto& [name, pool] : pools_) {
    const auto list = pool.manager->devices();
    const auto healthy = static_cast<double>(healthyCount(list));
    metrics_.gauge(plugin_metrics::kDevices, {{"resource", name}, {"health", kHealthy}})
        .set(healthy);
    metrics_.gauge(plugin_metrics::kDevices, {{"resource", name}, {"health", kUnhealthy}})
        .set(static_cast<double>(list.devices.size()) - healthy);
  }
  // The kernel keeps the port counters: read at each scrape, never stored. The node checks are
  // the ones applyConfig judged.
  auto scraped = portCounterFamilies(readPortCounters(flags_.sysfs_root, *topology_));
  scraped.push_back(node_checks_);
  if (held) {
    std::vector<NodePool> pools;
    for (const auto& [name, pool] : pools_) {
      pools.push_back(pool.manager->pool());
    }
    scraped.push_back(podPortFamily(*held, pools, *topology_));
  }
  if (flags_.cdi) { // only CDI specs name kube-rdma-nccl-hook
    std::ranges::move(scrapeHookOutcomes(config_.nccl_hook, logger_), std::back_inserter(scraped));
  }
  return metrics_.render() + renderScraped(scraped);
}

UnusedRdmaWatcher::Sample PluginManager::unusedRdmaSample() const {
  UnusedRdmaWatcher::Sample sample;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sample.after = std::chrono::seconds(config_.unused_rdma_after_seconds);
  }
  if (sample.after.count() == 0) {
    return sample;
  }
  const auto held = pod_resources_.read(); // outside the lock, as in renderMetrics
  if (!held) {
    return sample;
  }
  std::vector<NodePool> pools;
  std::shared_ptr<const NodeTopology> topology;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, pool] : pools_) {
      pools.push_back(pool.manager->pool());
    }
    topology = topology_;
  }
  // The data counters of the ports pods hold, and nothing else: not the scrape's every counter.
  sample.pods = podPortTraffic(
      *held,
      [&](const ContainerHoldings& container) { return portsHeld(container, pools, *topology); },
      [this](const HcaPort& port) { return readPortDataWords(flags_.sysfs_root, port); });
  return sample;
}

Result<std::string> PluginManager::healthz() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, pool] : pools_) {
    if (!pool.server || !pool.server->socketPresent()) {
      return makeError("pool " + name + " is not serving");
    }
  }
  return std::string("ok\n");
}

} // namespace kube_rdma
