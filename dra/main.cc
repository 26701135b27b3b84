// rdma-dra-driver: the node daemon of Dynamic Resource Allocation. Wiring only.
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <ctime>
#include <iostream>
#include <iterator>
#include <chrono>
#include <optional>
#include <vector>

#include "common/util/process_start.h"
#include "common/util/clock.h"
#include "common/util/log.h"
#include "common/pools/hook_outcomes.h"
#include "common/util/liveness_watchdog.h"
#include "common/util/metrics.h"
#include "common/labels/nfd_feature_writer.h"
#include "common/labels/nfd_features.h"
#include "common/checks/node_snapshot.h"
#include "common/pools/plugin_config.h"
#include "common/pools/pools.h"
#include "common/node/sysfs_discovery.h"
#include "dra/api_claim_reader.h"
#include "dra/claim_preparer.h"
#include "dra/claim_store.h"
#include "dra/device_health.h"
#include "dra/dra_metrics.h"
#include "dra/dra_server.h"
#include "dra/driver_probes.h"
#include "dra/flags.h"
#include "dra/pod_ports.h"
#include "dra/slice_publisher.h"
#include "kubeclient/api_client.h"
#include "kubeclient/kubeconfig.h"
#include "kubeclient/pod_events.h"
#include "http/metrics_server.h"
#include "nri/nccl_env_adjuster.h"
#include "nri/pod_directory.h"
#include "usage/unused_rdma.h"

namespace kube_rdma {
namespace {

int run(const DraFlags& flags, const sigset_t& signals, Logger& logger) {
  auto config = loadPluginConfig(flags.config_path);
  if (!config) {
    logger.error("cannot load the configuration", {{"error", config.error().message}});
    return 1;
  }
  auto api_config = flags.kubeconfig.empty() ? inClusterConfig("/", serviceEnvironmentFromProcess())
                                             : loadKubeconfig(flags.kubeconfig);
  if (!api_config) {
    logger.error("cannot configure the API client", {{"error", api_config.error().message}});
    return 1;
  }
  // One clock for every part of the driver.
  const ClockPtr clock = std::make_shared<RealClock>();
  const auto started = clock->now();
  MetricsRegistry registry;
  DraMetrics metrics(registry);
  ClientOptions api_options;
  // The API server's audit log tells the programs' requests apart by it.
  api_options.user_agent = "rdma-dra-driver";
  api_options.on_error = [&metrics](const ApiError& error) { metrics.recordApiError(error.code); };
  auto api = ApiClient::fromConfig(*api_config, api_options, clock);
  if (!api) {
    logger.error("cannot configure the API client", {{"error", api.error().message}});
    return 1;
  }
  // The runtime reads specs from the CDI directory but need not have made it.
  std::error_code made;
  std::filesystem::create_directories(flags.cdi_dir, made);
  if (made) {
    logger.error("cannot create the CDI directory",
                 {{"dir", flags.cdi_dir}, {"error", made.message()}});
    return 1;
  }
  auto store = ClaimStore::open(flags.state_dir);
  if (!store) {
    logger.error("cannot open the claim checkpoint", {{"error", store.error().message}});
    return 1;
  }
  const DiscoveryRoots roots{flags.sysfs_root, flags.proc_root, flags.dev_root};
  NodeTopology topology = discoverFromSysfs(roots);
  logger.info("discovered the node", {{"devices", std::to_string(topology.devices.size())}});

  ApiClaimReader reader(**api);
  ClaimPreparer preparer(reader, **store,
                         PrepareContext{flags.node_name, flags.cdi_dir, flags.state_dir, *config},
                         topology, logger, metrics, *clock);
  DraHealthService health(flags.node_name, *clock);
  health.update(deviceHealth(topology, *config));
  auto server = DraKubeletServer::start(flags.plugin_registry_dir, flags.plugin_dir, preparer,
                                        health, logger);
  if (!server) {
    logger.error("cannot serve the kubelet", {{"error", server.error().message}});
    return 1;
  }
  logger.info("serving the kubelet", {{"dra_socket", (*server)->draSocket()},
                                      {"registration_socket", (*server)->registrationSocket()}});
  SlicePublisherOptions publishing;
  publishing.slices.share_ports = flags.share_ports;
  SlicePublisher publisher(**api, flags.node_name, *config, logger, metrics, *clock, publishing);
  publisher.start(topology);
  const auto alive = [&] {
    const DraKubeletServer& kubelet = **server;
    return judgeDriverLiveness({kubelet.draSocketPresent(), kubelet.registrationSocketPresent(),
                                kubelet.registration(), started},
                               clock->now(), flags.health_timeout);
  };
  const LivenessWatchdog liveness(clock, alive, kLivenessPeriod, kLivenessGrace,
                                  logAndExit(logger));
  // Which pod holds which published port and what the ports carried: the kubelet is asked at
  // each scrape and by the unused-RDMA watcher, the ports follow the topology (the loop below).
  PodResourcesReader pod_resources(flags.pod_resources_socket, logger,
                                   [&] { metrics.recordPodResourcesError(); });
  PublishedPortUsage port_usage(flags.sysfs_root, flags.node_name);
  port_usage.set(topology, buildPools(topology, *config));
  // A pod whose containers' NCCL cannot use a GID of the pod's own network, or that holds RDMA
  // ports and does not use them, says so in its events.
  PodEventRecorder pod_events(**api, "rdma-dra-driver", flags.node_name, clock, logger);
  const PodWarningSink warn = [&pod_events](const PodWarning& warning) {
    pod_events.warn(warning);
  };
  // The runtime names each pod's UID to the NRI plugin (PodResources gives names only).
  PodDirectory pods;
  const auto nri =
      startNcclEnvPlugin(flags.nri_socket, {flags.sysfs_root, flags.host_proc_root}, registry,
                         logger, warn, [&pods](const nriapi::PodSandbox& pod) {
                           pods.remember(pod.namespace_(), pod.name(), pod.uid());
                         });
  UnusedRdmaWatcher unused_rdma(
      clock,
      [&] {
        UnusedRdmaWatcher::Sample sample{std::chrono::seconds(config->unused_rdma_after_seconds),
                                         std::nullopt};
        if (sample.after.count() > 0) {
          if (const auto held = pod_resources.read()) {
            sample.pods = port_usage.traffic(*held);
          }
        }
        return sample;
      },
      [&pods](const std::string& ns, const std::string& name) { return pods.uid(ns, name); }, warn,
      registry, logger);
  unused_rdma.start();
  MetricsServerPtr metrics_server;
  if (!flags.metrics_address.empty()) {
    auto started_server = MetricsServer::startWhenPortIsFree(
        flags.metrics_address, logger, kMetricsPortRetry,
        [&] {
          metrics.setPreparedClaims((*store)->preparedClaims().size());
          auto scraped = scrapeHookOutcomes(config->nccl_hook, logger);
          std::ranges::move(port_usage.scrape(pod_resources.read()), std::back_inserter(scraped));
          return registry.render() + renderScraped(scraped);
        },
        alive, [&] { return judgeDriverReadiness(publisher.state(), clock->now()); });
    if (!started_server) {
      logger.error("cannot serve metrics", {{"error", started_server.error().message}});
      return 1;
    }
    metrics_server = std::move(*started_server);
  }

  // Node labels for NFD: computed when the topology changes or GPUDirect is due to be judged
  // again, written when they change and before the file expires.
  std::optional<NfdFeatureWriter> nfd;
  std::optional<GpuDirectReadiness> gpudirect;
  if (!flags.nfd_features_file.empty()) {
    nfd.emplace(flags.nfd_features_file, flags.nfd_features_ttl, clock);
    gpudirect.emplace([roots](const NodeTopology& node) { return gpuDirectReady(node, roots); },
                      gpuDirectRecheckInterval(flags.nfd_features_ttl), clock);
  }
  const auto labelsOf = [&](const NodeTopology& node) {
    return nfd ? nodeLabels(node, buildPools(node, *config), gpudirect->ready(node)) : NodeLabels();
  };
  NodeLabels labels = labelsOf(topology);

  // Rediscovery every second, between signals: port states reach the health stream, device
  // changes the slices and the preparer.
  const timespec period{1, 0};
  while (true) {
    if (nfd) {
      if (Result<bool> written = nfd->update(labels); !written) {
        logger.warn("cannot write the NFD features file",
                    {{"path", nfd->path()}, {"error", written.error().message}});
      }
    }
    const int received = sigtimedwait(&signals, nullptr, &period);
    if (received > 0) {
      logger.info("signal received, stopping", {{"signal", strsignal(received)}});
      break;
    }
    NodeTopology now = discoverFromSysfs(roots);
    if (now == topology) {
      if (gpudirect && clock->now() >= gpudirect->due()) {
        labels = labelsOf(topology);
      }
      continue;
    }
    logger.info("the node changed", {{"devices", std::to_string(now.devices.size())}});
    topology = std::move(now);
    port_usage.set(topology, buildPools(topology, *config));
    health.update(deviceHealth(topology, *config));
    preparer.setTopology(topology);
    publisher.set(topology);
    labels = labelsOf(topology);
  }
  publisher.stop();
  return 0;
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  using namespace kube_rdma;
  const char* node_name_env = std::getenv("NODE_NAME");
  auto flags = parseDraFlags(std::vector<std::string>(argv + 1, argv + argc),
                             node_name_env != nullptr ? node_name_env : "");
  if (const std::optional<int> code = exitBeforeRunning("rdma-dra-driver", flags)) {
    return *code;
  }
  // SIGTERM and SIGINT are taken by the main thread with sigtimedwait, before gRPC's and the
  // publisher's threads exist.
  const sigset_t signals = takeStopSignals();
  Logger logger(std::cerr, flags->log_format);
  return run(*flags, signals, logger);
}
