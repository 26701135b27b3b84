// rdma-device-plugin: the node daemon. Wiring only; the work is in PluginManager.
#include <malloc.h>
#include <signal.h>

#include <iostream>
#include <optional>
#include <stop_token>
#include <thread>

#include "common/util/process_start.h"
#include "common/util/file_watcher.h"
#include "common/util/liveness_watchdog.h"
#include "common/util/log.h"
#include "common/util/metrics.h"
#include "plugin/flags.h"
#include "http/metrics_server.h"
#include "kubeclient/pod_events.h"
#include "nri/nccl_env_adjuster.h"
#include "nri/pod_directory.h"
#include "plugin/plugin_manager.h"
#include "usage/unused_rdma.h"

int main(int argc, char** argv) {
  using namespace kube_rdma;
  // One malloc arena instead of one per thread (up to 8 per core): the plugin's ~18 threads
  // allocate little and rarely at once; ~0.2 MiB less idle RSS (BENCHMARKS.md "Device plugin").
  // Before any thread exists.
  mallopt(M_ARENA_MAX, 1);
  auto flags = parsePluginFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (const std::optional<int> code = exitBeforeRunning("rdma-device-plugin", flags)) {
    return *code;
  }
  // SIGTERM and SIGINT are taken by one thread with sigwait, before gRPC's and the watchers'
  // threads exist.
  const sigset_t signals = takeStopSignals();

  Logger logger(std::cerr, flags->log_format);
  MetricsRegistry metrics;
  auto watcher = createInotifyWatcher();
  if (!watcher) {
    logger.error("cannot start the file watcher", {{"error", watcher.error().message}});
    return 1;
  }
  const ClockPtr clock = std::make_shared<RealClock>();
  PluginManager manager(*flags, **watcher, logger, metrics, clock);
  if (auto status = manager.start(); !status) {
    logger.error("cannot start", {{"error", status.error().message}});
    return 1;
  }
  // Per-container GID indexes into the environment, for containers carrying the NCCL hook, and
  // Warning events on pods where that cannot be their own: with the pod's token, which only the
  // CDI manifests give (and only for events).
  const auto api =
      flags->nri_socket.empty() ? nullptr : podEventsClient("rdma-device-plugin", logger);
  std::optional<PodEventRecorder> pod_events;
  PodWarningSink warn;
  if (api) {
    pod_events.emplace(*api, "rdma-device-plugin", flags->node_name, clock, logger);
    warn = [&pod_events](const PodWarning& warning) { pod_events->warn(warning); };
  }
  // The runtime names each pod's UID to the NRI plugin: what an event about a pod that holds
  // RDMA ports and does not use them needs (PodResources gives names only).
  PodDirectory pods;
  const auto nri =
      startNcclEnvPlugin(flags->nri_socket, {flags->sysfs_root, flags->host_proc_root}, metrics,
                         logger, warn, [&pods](const nriapi::PodSandbox& pod) {
                           pods.remember(pod.namespace_(), pod.name(), pod.uid());
                         });
  UnusedRdmaWatcher unused_rdma(
      clock, [&manager] { return manager.unusedRdmaSample(); },
      [&pods](const std::string& ns, const std::string& name) { return pods.uid(ns, name); }, warn,
      metrics, logger);
  unused_rdma.start();
  const LivenessWatchdog liveness(
      clock, [&manager] { return manager.healthz(); }, kLivenessPeriod, kLivenessGrace,
      logAndExit(logger));
  MetricsServerPtr metrics_server;
  if (!flags->metrics_address.empty()) {
    auto server = MetricsServer::startWhenPortIsFree(
        flags->metrics_address, logger, kMetricsPortRetry,
        [&manager] { return manager.renderMetrics(); }, [&manager] { return manager.healthz(); });
    if (!server) {
      logger.error("cannot serve metrics", {{"error", server.error().message}});
      return 1;
    }
    metrics_server = std::move(*server);
  }

  std::stop_source stop;
  std::thread signal_thread([&signals, &stop, &logger] {
    int received = 0;
    sigwait(&signals, &received);
    logger.info("signal received, stopping", {{"signal", strsignal(received)}});
    stop.request_stop();
  });
  manager.run(stop.get_token());
  signal_thread.join();
  // Stop the watcher thread before the manager goes: removing our sockets on the way out makes
  // inotify events whose callbacks would otherwise post into a manager being destroyed.
  watcher->reset();
  return 0;
}
