#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/result.h"
#include "webhook/certificate_store.h"
#include "webhook/policy_store.h"
#include "webhook/webhook_metrics.h"

// The HTTPS side of rdma-webhook (cpp-httplib 0.11.4): POST /mutate, /healthz, /readyz, /metrics.
// Transport only; what a review does is reviewAdmission().
namespace kube_rdma {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8443; // 0: any free port (tests)
  // Each keep-alive connection holds one thread for its lifetime (cpp-httplib), so the pool is
  // sized above what the API servers keep open (client-go: 25 idle connections per host).
  size_t threads = 64;
  // The API server caps requests at 3 MiB; twice that, like Istio.
  size_t max_body_bytes = 6 * 1024 * 1024;
  // Below the MutatingWebhookConfiguration's timeoutSeconds (5 in manifests/).
  std::chrono::milliseconds read_timeout{3000};
  std::chrono::milliseconds write_timeout{3000};
  size_t keep_alive_max_count = 1000;
  std::chrono::seconds keep_alive_timeout{5};
};

class AdmissionServer {
public:
  AdmissionServer(ServerOptions options, CertificateStore& certificates, PolicyStore& policies,
                  MetricsRegistry& registry, WebhookMetrics& metrics, ClockPtr clock,
                  Logger& logger);

  // Binds the listening socket; the port is known afterwards.
  Status bind();
  int port() const { return port_; }
  // Serves until stop(). Returns false when listening failed.
  bool serve();
  // Starts a drain: /readyz fails so endpoints drop this replica, and every reply asks the client
  // to close its connection so it reconnects elsewhere. Requests keep being answered.
  void beginDrain();
  // Stops accepting and returns once requests in flight are answered (serve() returns).
  void stop();

  // Ready with a certificate and a valid policy, and not draining; `why` says what is missing.
  bool ready(std::string& why) const;
  // The Prometheus text, with the certificate expiry computed now.
  std::string renderMetrics();

private:
  void routes();
  void handleMutate(const httplib::Request& request, httplib::Response& response);
  httplib::Server::HandlerResponse screen(const httplib::Request& request,
                                          httplib::Response& response) const;

  ServerOptions options_;
  CertificateStore& certificates_;
  PolicyStore& policies_;
  MetricsRegistry& registry_;
  WebhookMetrics& metrics_;
  ClockPtr clock_;
  Logger& logger_;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::atomic<bool> draining_{false};
  const WebhookPolicy no_policy_{};
};

} // namespace kube_rdma
