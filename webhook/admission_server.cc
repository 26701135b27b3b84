#include "webhook/admission_server.h"

#include <exception>
#include <string_view>
#include <vector>

#include "common/util/strings.h"

namespace kube_rdma {
namespace http = boost::beast::http;

AdmissionServer::AdmissionServer(ServerOptions options, CertificateStore& certificates,
                                 PolicyStore& policies, MetricsRegistry& registry,
                                 WebhookMetrics& metrics, ClockPtr clock, Logger& logger,
                                 Reviewer review)
    : certificates_(certificates), policies_(policies), registry_(registry), metrics_(metrics),
      clock_(std::move(clock)), logger_(logger), review_(std::move(review)),
      server_(
          std::move(options), [this](SSL_CTX& ctx) { return certificates_.configure(ctx); },
          [this](const HttpRequest& request) { return route(request); }) {}

// Runs inline on the server thread that read the request: a review is 0.1-0.3 ms of CPU, less
// than handing it to another thread and back would cost in latency. The exception, a review that
// may wait on the API server, is picked by ServerOptions::may_block (run_webhook.cc).
HttpResponse AdmissionServer::route(const HttpRequest& request) {
  // The API server appends ?timeout=Ns; routing is on the path alone.
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const bool get = request.method() == http::verb::get || request.method() == http::verb::head;
  HttpResponse response;
  try {
    if (path == "/mutate" && request.method() == http::verb::post) {
      response = mutate(request);
    } else if (path == "/healthz" && get) {
      response = textResponse(http::status::ok, "ok\n");
    } else if (path == "/readyz" && get) {
      std::string why;
      response = ready(why) ? textResponse(http::status::ok, "ok\n")
                            : textResponse(http::status::service_unavailable, why + "\n");
    } else if (path == "/metrics" && get) {
      response = textResponse(http::status::ok, renderMetrics(), "text/plain; version=0.0.4");
    } else {
      response = textResponse(http::status::not_found, "not found\n");
    }
  } catch (const std::exception& e) {
    response = failed(path, e.what());
  } catch (...) {
    response = failed(path, "unknown error");
  }
  if (draining_) {
    response.keep_alive(false);
  }
  return response;
}

HttpResponse AdmissionServer::failed(std::string_view path, const std::string& what) {
  logger_.error("request failed", {{"path", std::string(path)}, {"error", what}});
  return textResponse(http::status::internal_server_error, "internal error\n");
}

HttpResponse AdmissionServer::mutate(const HttpRequest& request) {
  const auto start = clock_->now();
  const std::string_view type(request[http::field::content_type].data(),
                              request[http::field::content_type].size());
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return textResponse(http::status::unsupported_media_type,
                        "Content-Type must be application/json, got " + std::string(type) + "\n");
  }
  // Without a valid policy the replica is not ready; should a call come anyway, nothing is an
  // RDMA pod under the empty policy, so the pod is admitted unchanged.
  std::shared_ptr<const WebhookPolicy> policy = policies_.current();
  ReviewOutcome outcome = review_(request.body(), policy ? *policy : no_policy_);
  metrics_.recordReview(outcome, clock_->now() - start);
  const bool ok = outcome.http_status == 200;
  if (!ok) {
    logger_.warn("bad admission request", {{"error", outcome.body}});
  } else if (!outcome.applied.empty() || !outcome.warnings.empty()) {
    logger_.info("pod reviewed",
                 {{"uid", outcome.uid},
                  {"pod", outcome.pod},
                  {"outcome", outcome.outcome},
                  {"applied", joinStrings({outcome.applied.begin(), outcome.applied.end()}, "; ")},
                  {"warnings", joinStrings(outcome.warnings, "; ")}});
  } else {
    logger_.debug("pod reviewed", {{"uid", outcome.uid},
                                   {"pod", outcome.pod},
                                   {"outcome", outcome.outcome},
                                   {"skipped", outcome.skipped}});
  }
  return textResponse(static_cast<http::status>(outcome.http_status), std::move(outcome.body),
                      ok ? "application/json" : "text/plain");
}

bool AdmissionServer::ready(std::string& why) const {
  std::vector<std::string> missing;
  if (certificates_.current() == nullptr) {
    missing.push_back("no serving certificate loaded");
  }
  if (policies_.current() == nullptr) {
    missing.push_back("no valid policy loaded");
  }
  if (draining_) {
    missing.push_back("shutting down");
  }
  why = joinStrings(missing, "; ");
  return missing.empty();
}

std::string AdmissionServer::renderMetrics() {
  if (std::shared_ptr<const ServingCertificate> pair = certificates_.current()) {
    metrics_.setCertificateExpiry(
        std::chrono::duration<double>(pair->notAfter() - clock_->wallNow()).count());
  }
  metrics_.setPolicyGeneration(policies_.generation());
  metrics_.setConnections(server_.openConnections(), server_.cutConnections());
  return registry_.render();
}

} // namespace kube_rdma
