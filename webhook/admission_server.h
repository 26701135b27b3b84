#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/util/clock.h"
#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/util/result.h"
#include "http/https_server.h"
#include "webhook/certificate_store.h"
#include "webhook/policy_store.h"
#include "webhook/review.h"
#include "webhook/webhook_metrics.h"

// The HTTPS side of rdma-webhook: POST /mutate, /healthz, /readyz, /metrics on an HttpsServer.
// Transport only; what a review does is reviewAdmission(). docs/webhook.md "Connections".
namespace kube_rdma {

// What POST /mutate does with a body: reviewAdmission in the binary, a stand-in in tests.
using Reviewer = std::function<ReviewOutcome(std::string_view body, const WebhookPolicy& policy)>;

class AdmissionServer {
public:
  AdmissionServer(ServerOptions options, CertificateStore& certificates, PolicyStore& policies,
                  MetricsRegistry& registry, WebhookMetrics& metrics, ClockPtr clock,
                  Logger& logger, Reviewer review);

  // Binds the listening socket; the port is known afterwards.
  Status bind() { return server_.bind(); }
  int port() const { return server_.port(); }
  // After bind(): serves on the server's threads (this one among them) until stop().
  void serve() { server_.serve(); }
  // Starts a drain: /readyz fails so endpoints drop this replica, and every reply asks the client
  // to close its connection so it reconnects elsewhere. Requests keep being answered.
  void beginDrain() { draining_ = true; }
  // Stops accepting and closes idle connections; serve() returns once the requests in flight are
  // answered and their connections closed.
  void stop() {
    draining_ = true;
    server_.stop();
  }

  // Ready with a certificate and a valid policy, and not draining; `why` says what is missing.
  bool ready(std::string& why) const;
  // The Prometheus text, with the certificate expiry computed now.
  std::string renderMetrics();

private:
  HttpResponse route(const HttpRequest& request);
  HttpResponse mutate(const HttpRequest& request);
  // A request whose handling threw: logged, answered 500.
  HttpResponse failed(std::string_view path, const std::string& what);

  CertificateStore& certificates_;
  PolicyStore& policies_;
  MetricsRegistry& registry_;
  WebhookMetrics& metrics_;
  ClockPtr clock_;
  Logger& logger_;
  Reviewer review_;
  std::atomic<bool> draining_{false};
  const WebhookPolicy no_policy_{};
  // Last: its threads call route() until it is gone.
  HttpsServer server_;
};

} // namespace kube_rdma
