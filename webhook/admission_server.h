#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/result.h"
#include "webhook/certificate_store.h"
#include "webhook/policy_store.h"
#include "webhook/review.h"
#include "webhook/webhook_metrics.h"

// The HTTPS side of rdma-webhook (cpp-httplib 0.11.4): POST /mutate, /healthz, /readyz, /metrics.
// Transport only; what a review does is reviewAdmission(). docs/webhook.md "Connections".
namespace kube_rdma {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8443; // 0: any free port (tests)
  // cpp-httplib serves each connection on one thread for its whole keep-alive life: threads grow
  // to this many as connections come, so this many are served at once; more wait for a thread.
  size_t max_connections = 1024;
  // cpp-httplib listens with a backlog of 5: a burst of new connections has SYNs dropped and
  // waits a second or more for the retry. Raised after bind (the kernel caps it at somaxconn).
  int listen_backlog = 1024;
  // The API server caps requests at 3 MiB; twice that, like Istio.
  size_t max_body_bytes = size_t{6} * 1024 * 1024;
  // Below the MutatingWebhookConfiguration's timeoutSeconds (5 in manifests/).
  std::chrono::milliseconds read_timeout{3000};
  std::chrono::milliseconds write_timeout{3000};
  size_t keep_alive_max_count = 1000;
  std::chrono::seconds keep_alive_timeout{5};
  // read_timeout restarts with every byte, so a client sending a byte a second is never timed
  // out by it; a connection that goes keep_alive_timeout + request_timeout without an answered
  // request is cut at its next read.
  std::chrono::milliseconds request_timeout{5000};
  // After a refusal (411/413) the server half-closes and discards the unread body for at most
  // this long, so the client reads the answer rather than a reset.
  std::chrono::milliseconds refusal_linger{1000};
};

// What POST /mutate does with a body: reviewAdmission in the binary, a stand-in in tests.
using Reviewer = std::function<ReviewOutcome(std::string_view body, const WebhookPolicy& policy)>;

class AdmissionServer {
public:
  AdmissionServer(ServerOptions options, CertificateStore& certificates, PolicyStore& policies,
                  MetricsRegistry& registry, WebhookMetrics& metrics, ClockPtr clock,
                  Logger& logger, Reviewer review);

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

  // Connections accepted and not yet closed (served or waiting for a thread), and connections
  // cut by the request deadline; shared with the task queue and the TLS callbacks.
  struct Connections {
    std::atomic<size_t> open{0};
    std::atomic<uint64_t> cut{0};
    std::chrono::milliseconds limit{0};
  };

private:
  void routes();
  void handleMutate(const httplib::Request& request, httplib::Response& response);
  httplib::Server::HandlerResponse screen(const httplib::Request& request,
                                          httplib::Response& response) const;
  // Answers `status` with `message` and closes the connection (see the .cc).
  void refuse(const httplib::Request& request, httplib::Response& response, int status,
              const std::string& message) const;

  ServerOptions options_;
  CertificateStore& certificates_;
  PolicyStore& policies_;
  MetricsRegistry& registry_;
  WebhookMetrics& metrics_;
  ClockPtr clock_;
  Logger& logger_;
  Reviewer review_;
  // Before server_: connections of its SSL_CTX point at it.
  std::shared_ptr<Connections> connections_ = std::make_shared<Connections>();
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> draining_{false};
  const WebhookPolicy no_policy_{};
};

} // namespace kube_rdma
