#include "webhook/admission_server.h"

#include <cstdlib>
#include <set>

#include "webhook/review.h"

namespace kube_rdma {
namespace {

constexpr const char* kText = "text/plain";

// Answers without reading the body. cpp-httplib 0.11.4 decides keep-alive before routing, so the
// "Connection: close" here is for the client (Go's client closes on it); unread bytes, if any,
// are read as a next request, which fails to parse and ends the connection. (Shutting the socket's
// read side down instead makes the kernel reset the connection and the client can lose this
// answer.)
void refuse(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  response.set_header("Connection", "close");
  response.set_content(message + "\n", kText);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : "; ") + item;
  }
  return out;
}

std::string joined(const std::set<std::string>& items) {
  return joined(std::vector<std::string>(items.begin(), items.end()));
}

} // namespace

AdmissionServer::AdmissionServer(ServerOptions options, CertificateStore& certificates,
                                 PolicyStore& policies, MetricsRegistry& registry,
                                 WebhookMetrics& metrics, ClockPtr clock, Logger& logger)
    : options_(std::move(options)), certificates_(certificates), policies_(policies),
      registry_(registry), metrics_(metrics), clock_(std::move(clock)), logger_(logger) {
  server_ = std::make_unique<httplib::SSLServer>(
      [this](SSL_CTX& ctx) { return certificates_.configure(ctx); });
  const size_t threads = options_.threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_read_timeout(options_.read_timeout);
  server_->set_write_timeout(options_.write_timeout);
  server_->set_keep_alive_max_count(options_.keep_alive_max_count);
  server_->set_keep_alive_timeout(options_.keep_alive_timeout.count());
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_tcp_nodelay(true);
  routes();
}

void AdmissionServer::routes() {
  server_->set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return screen(req, res); });
  // The API server appends ?timeout=Ns; httplib matches the path alone.
  server_->Post("/mutate", [this](const httplib::Request& req, httplib::Response& res) {
    handleMutate(req, res);
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", kText);
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    std::string why;
    if (ready(why)) {
      res.set_content("ok\n", kText);
    } else {
      res.status = 503;
      res.set_content(why + "\n", kText);
    }
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(renderMetrics(), "text/plain; version=0.0.4");
  });
  server_->set_exception_handler(
      [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        logger_.error("request failed", {{"path", req.path}, {"error", what}});
        res.status = 500;
        res.set_content("internal error\n", kText);
      });
  server_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    if (draining_) {
      res.set_header("Connection", "close");
    }
  });
}

// Runs before the body is read: a request must announce a length within the cap, so neither a
// chunked stream nor a body running until the connection closes can exhaust memory.
httplib::Server::HandlerResponse AdmissionServer::screen(const httplib::Request& request,
                                                         httplib::Response& response) const {
  if (request.method != "POST" && request.method != "PUT" && request.method != "PATCH") {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  if (request.has_header("Transfer-Encoding")) {
    refuse(response, 411, "chunked bodies are not accepted: send Content-Length");
    return httplib::Server::HandlerResponse::Handled;
  }
  if (!request.has_header("Content-Length")) {
    refuse(response, 411, "Content-Length is required");
    return httplib::Server::HandlerResponse::Handled;
  }
  const std::string length = request.get_header_value("Content-Length");
  char* end = nullptr;
  const unsigned long long bytes = std::strtoull(length.c_str(), &end, 10);
  if (length.empty() || *end != '\0' || bytes > options_.max_body_bytes) {
    refuse(response, 413,
           "body of " + length + " bytes is over the limit of " +
               std::to_string(options_.max_body_bytes));
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

void AdmissionServer::handleMutate(const httplib::Request& request, httplib::Response& response) {
  const auto start = clock_->now();
  const std::string type = request.get_header_value("Content-Type");
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    response.status = 415;
    response.set_content("Content-Type must be application/json, got " + type + "\n", kText);
    return;
  }
  // Without a valid policy the replica is not ready; should a call come anyway, nothing is an
  // RDMA pod under the empty policy, so the pod is admitted unchanged.
  std::shared_ptr<const WebhookPolicy> policy = policies_.current();
  ReviewOutcome outcome = reviewAdmission(request.body, policy ? *policy : no_policy_);
  response.status = outcome.http_status;
  response.set_content(outcome.body, outcome.http_status == 200 ? "application/json" : kText);
  metrics_.recordReview(outcome, clock_->now() - start);

  if (outcome.http_status != 200) {
    logger_.warn("bad admission request", {{"error", outcome.body}});
  } else if (!outcome.applied.empty() || !outcome.warnings.empty()) {
    logger_.info("pod reviewed", {{"uid", outcome.uid},
                                  {"outcome", outcome.outcome},
                                  {"applied", joined(outcome.applied)},
                                  {"warnings", joined(outcome.warnings)}});
  } else {
    logger_.debug(
        "pod reviewed",
        {{"uid", outcome.uid}, {"outcome", outcome.outcome}, {"skipped", outcome.skipped}});
  }
}

Status AdmissionServer::bind() {
  if (!server_->is_valid()) {
    return makeError("TLS set-up failed (OpenSSL rejected the TLS settings)");
  }
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
  } else if (server_->bind_to_port(options_.host, options_.port)) {
    port_ = options_.port;
  }
  if (port_ <= 0) {
    return makeError("cannot listen on " + options_.host + ":" + std::to_string(options_.port));
  }
  return Ok{};
}

bool AdmissionServer::serve() {
  return server_->listen_after_bind();
}

void AdmissionServer::beginDrain() {
  draining_ = true;
}

void AdmissionServer::stop() {
  draining_ = true;
  server_->stop();
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
  why = joined(missing);
  return missing.empty();
}

std::string AdmissionServer::renderMetrics() {
  if (std::shared_ptr<const ServingCertificate> pair = certificates_.current()) {
    metrics_.setCertificateExpiry(
        std::chrono::duration<double>(pair->notAfter() - clock_->wallNow()).count());
  }
  metrics_.setPolicyGeneration(policies_.generation());
  return registry_.render();
}

} // namespace kube_rdma
