#include "webhook/run_webhook.h"

#include <signal.h>
#include <sys/resource.h>

#include <iostream>
#include <optional>
#include <thread>

#include "common/util/process_start.h"
#include "common/util/file_watcher.h"
#include "common/util/log.h"
#include "common/util/strings.h"
#include "webhook/policy.h"
#include "kubeclient/api_client.h"
#include "kubeclient/kubeconfig.h"
#include "http/metrics_server.h"
#include "webhook/claim_cache.h"
#include "webhook/flags.h"

namespace kube_rdma {
namespace {

// Each connection is a descriptor. Runtimes may give containers a soft limit of 1,024 with a
// far higher hard limit; raise the soft one to the hard one (as Go programs do at start) and say
// so when even that is below the connection cap.
void raiseDescriptorLimit(size_t max_connections, Logger& logger) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) {
    return;
  }
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
  }
  // Listeners, watches, logs and the like besides the connections.
  constexpr rlim_t kOwnDescriptors = 64;
  if (files.rlim_cur < max_connections + kOwnDescriptors) {
    logger.warn("descriptor limit below --max-connections: connections beyond it wait in the "
                "listen backlog",
                {{"limit", std::to_string(files.rlim_cur)},
                 {"max_connections", std::to_string(max_connections)}});
  }
}

// Pods of one Job share a claim template: a burst of them reads it once.
constexpr std::chrono::seconds kClaimCacheTtl{30};
// Well inside the MutatingWebhookConfiguration's 5 s, with the review's own time.
constexpr std::chrono::milliseconds kClaimReadTimeout{1500};

// The API client for reading pods' resource claims: from --kubeconfig, else the pod's service
// account in a cluster, else none (nullptr: such pods are admitted with a warning). A
// --kubeconfig that cannot be used is an error; a missing service account is not.
Result<ApiClientPtr> connectApi(const WebhookFlags& flags, const ClockPtr& clock, Logger& logger) {
  const bool from_file = !flags.kubeconfig.empty();
  const ServiceEnvironment env = serviceEnvironmentFromProcess();
  Result<ApiConfig> config =
      from_file ? loadKubeconfig(flags.kubeconfig) : inClusterConfig("/", env);
  if (from_file && !config.ok()) {
    return config.error();
  }
  if (!from_file && (env.host.empty() || !config.ok())) {
    logger.warn("no API access: pods with resource claims are admitted with a warning",
                {{"why", env.host.empty() ? "no --kubeconfig and not in a cluster"
                                          : config.error().message}});
    return ApiClientPtr{};
  }
  logger.info("reading resource claims",
              {{"server", config->server},
               {"from", from_file ? flags.kubeconfig : std::string("service account")}});
  ClientOptions options;
  options.connect_timeout = kClaimReadTimeout;
  options.request_timeout = kClaimReadTimeout;
  options.user_agent = "rdma-webhook";
  return ApiClient::fromConfig(*config, options, clock);
}

int run(const WebhookFlags& flags) {
  Logger logger(std::cerr, flags.log_format);
  const ClockPtr clock = std::make_shared<RealClock>();
  raiseDescriptorLimit(flags.max_connections, logger);
  // Signals go to the signal thread only; every thread started below inherits this mask.
  const sigset_t signals = takeStopSignals();

  MetricsRegistry registry;
  WebhookMetrics metrics(registry);
  CertificateStore certificates(flags.tls_cert_file, flags.tls_private_key_file);
  PolicyStore policies(flags.policy_file);

  const auto reload_certificates = [&] {
    if (Status s = certificates.reload(); !s.ok()) {
      metrics.certificateReloadFailed();
      logger.error("certificate not loaded, the last good one stays",
                   {{"error", s.error().message}});
    } else {
      logger.info("certificate loaded",
                  {{"not_after", rfc3339Utc(certificates.current()->notAfter())}});
    }
  };
  const auto reload_policy = [&] {
    const uint64_t before = policies.generation();
    if (Status s = policies.reload(); !s.ok()) {
      metrics.policyReloadFailed();
      logger.error("policy rejected, the last good one stays", {{"error", s.error().message}});
    } else if (policies.generation() != before) {
      logger.info("policy loaded", {{"file", flags.policy_file},
                                    {"generation", std::to_string(policies.generation())}});
      const std::vector<std::string> never_sent = resourcesNeverSent(*policies.current());
      if (!never_sent.empty()) {
        logger.warn("policy resources the shipped MutatingWebhookConfiguration never sends: pods "
                    "asking only for them get nothing unless its matchConditions are widened too",
                    {{"resources", joinStrings(never_sent, ",")},
                     {"sent_prefix", std::string(kSentResourcePrefix)}});
      }
      metrics.setResourcesNeverSent(never_sent.size());
    }
  };
  reload_certificates();
  reload_policy();

  Result<FileWatcherPtr> watcher = createInotifyWatcher();
  if (!watcher.ok()) {
    logger.error("cannot watch files", {{"error", watcher.error().message}});
    return 1;
  }
  for (const std::string& path : {flags.tls_cert_file, flags.tls_private_key_file}) {
    if (Status s = (*watcher)->watchFile(path, reload_certificates); !s.ok()) {
      logger.error("cannot watch certificate", {{"error", s.error().message}});
      return 1;
    }
  }
  if (!flags.policy_file.empty()) {
    if (Status s = (*watcher)->watchFile(flags.policy_file, reload_policy); !s.ok()) {
      logger.error("cannot watch policy", {{"error", s.error().message}});
      return 1;
    }
  }

  Result<ApiClientPtr> api = connectApi(flags, clock, logger);
  if (!api.ok()) {
    logger.error("cannot use the API server", {{"error", api.error().message}});
    return 1;
  }
  std::optional<ClaimCache> claims;
  ClaimSpecLookup read_claim;
  if (*api != nullptr) {
    read_claim = claims.emplace(**api, clock, kClaimCacheTtl, registry).lookup();
  }
  ServerOptions options;
  options.host = flags.listen.host;
  options.port = flags.listen.port;
  options.max_connections = flags.max_connections;
  options.request_timeout = flags.request_timeout;
  if (read_claim) {
    // Only the review of a pod with resource claims may wait on the API server (a claim or
    // template not cached yet): answered on the pool, it holds up no other connection.
    options.may_block = [](const HttpRequest& request) {
      return request.body().find("\"resourceClaims\"") != std::string::npos;
    };
  }
  AdmissionServer server(options, certificates, policies, registry, metrics, clock, logger,
                         [&read_claim](std::string_view body, const WebhookPolicy& policy) {
                           return reviewAdmission(body, policy, read_claim);
                         });
  if (Status s = server.bind(); !s.ok()) {
    logger.error("cannot start", {{"error", s.error().message}});
    return 1;
  }

  // Plain-HTTP /metrics and /healthz, when asked for; both are on the HTTPS port as well.
  MetricsServerPtr metrics_server;
  if (!flags.metrics_address.empty()) {
    Result<MetricsServerPtr> started = MetricsServer::start(
        flags.metrics_address, [&server] { return server.renderMetrics(); },
        []() -> Result<std::string> { return std::string("ok\n"); });
    if (!started.ok()) {
      logger.error("cannot listen for metrics", {{"error", started.error().message}});
      return 1;
    }
    metrics_server = std::move(*started);
  }

  // serve() returns only after stop(), which only SIGTERM or SIGINT brings.
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    logger.info("draining", {{"signal", std::to_string(signal)},
                             {"delay_seconds", std::to_string(flags.shutdown_delay.count())}});
    server.beginDrain();
    std::this_thread::sleep_for(flags.shutdown_delay);
    server.stop();
  });
  logger.info("serving", {{"address", flags.listen.host + ":" + std::to_string(server.port())},
                          {"policy", flags.policy_file.empty() ? "defaults" : flags.policy_file}});
  server.serve();
  signal_thread.join();
  logger.info("stopped");
  return 0;
}

} // namespace

int runWebhook(const std::string& program, const std::vector<std::string>& args) {
  Result<WebhookFlags> flags = parseWebhookFlags(args);
  if (const std::optional<int> code = exitBeforeRunning(program, flags)) {
    return *code;
  }
  return run(*flags);
}

} // namespace kube_rdma
