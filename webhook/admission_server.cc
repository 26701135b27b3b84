#include "webhook/admission_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "webhook/held_writes.h"

namespace kube_rdma {
namespace {

constexpr const char* kText = "text/plain";

// Half-closes `fd` and discards what the client still sends until it closes or `linger` passes:
// closing a socket with unread bytes makes the kernel send a reset, and a client still writing
// its body could lose the answer already sent.
void lingeringClose(int fd, std::chrono::milliseconds linger, const Clock& clock) {
  ::shutdown(fd, SHUT_WR);
  char discard[16384];
  const auto end = clock.now() + linger;
  for (auto now = clock.now(); now < end; now = clock.now()) {
    pollfd readable{fd, POLLIN, 0};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - now);
    if (::poll(&readable, 1, static_cast<int>(left.count())) <= 0) {
      return;
    }
    const ssize_t n = ::recv(fd, discard, sizeof(discard), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      return;
    }
  }
}

int socketOf(const httplib::Request& request) {
  return request.ssl != nullptr ? SSL_get_fd(request.ssl) : -1;
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
                                 WebhookMetrics& metrics, ClockPtr clock, Logger& logger,
                                 Reviewer review)
    : options_(std::move(options)), certificates_(certificates), policies_(policies),
      registry_(registry), metrics_(metrics), clock_(std::move(clock)), logger_(logger),
      review_(std::move(review)),
      watchdog_(std::chrono::duration_cast<std::chrono::milliseconds>(options_.keep_alive_timeout) +
                    options_.request_timeout,
                clock_, logger_) {
  server_ = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
    // An idle connection gives its read and write buffers (about 34 KiB) back: a thousand
    // held connections would otherwise keep 34 MiB for nothing.
    SSL_CTX_set_mode(&ctx, SSL_MODE_RELEASE_BUFFERS);
    return certificates_.configure(ctx) && watchdog_.install(ctx);
  });
  const TaskQueueLimits limits{options_.threads,
                               std::max(options_.threads, options_.max_connections),
                               options_.idle_thread_timeout};
  server_->new_task_queue = [limits, stats = queue_stats_] {
    return new ElasticTaskQueue(limits, stats);
  };
  server_->set_read_timeout(options_.read_timeout);
  server_->set_write_timeout(options_.write_timeout);
  server_->set_keep_alive_max_count(options_.keep_alive_max_count);
  server_->set_keep_alive_timeout(options_.keep_alive_timeout.count());
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_tcp_nodelay(true);
  server_->set_socket_options([this](socket_t fd) {
    httplib::default_socket_options(fd);
    listen_fd_ = fd;
  });
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
          std::rethrow_exception(std::move(error));
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        logger_.error("request failed", {{"path", req.path}, {"error", what}});
        res.status = 500;
        res.set_content("internal error\n", kText);
      });
  server_->set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    watchdog_.answered(req.ssl);
    if (draining_) {
      res.set_header("Connection", "close");
    }
    // cpp-httplib writes the status line and headers, then the body: two SSL_writes. Held from
    // here, just before the headers are written, they leave in one write() when the logger,
    // which httplib calls after the body, releases them. The SSL is this connection's own.
    if (req.ssl != nullptr) {
      holdWrites(*const_cast<SSL*>(req.ssl));
    }
  });
  server_->set_logger([](const httplib::Request& req, const httplib::Response&) {
    if (req.ssl != nullptr && !releaseWrites(*req.ssl)) {
      // Part of the answer is lost: end the connection rather than answer the next request.
      ::shutdown(socketOf(req), SHUT_RDWR);
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
    refuse(request, response, 411, "chunked bodies are not accepted: send Content-Length");
    return httplib::Server::HandlerResponse::Handled;
  }
  if (!request.has_header("Content-Length")) {
    refuse(request, response, 411, "Content-Length is required");
    return httplib::Server::HandlerResponse::Handled;
  }
  const std::string length = request.get_header_value("Content-Length");
  char* end = nullptr;
  const unsigned long long bytes = std::strtoull(length.c_str(), &end, 10);
  if (length.empty() || *end != '\0' || bytes > options_.max_body_bytes) {
    refuse(request, response, 413,
           "body of " + length + " bytes is over the limit of " +
               std::to_string(options_.max_body_bytes));
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// cpp-httplib 0.11.4 decides keep-alive before routing, so an unread body would be read as the
// next request (a smuggled one if the client wrote one there). The answer is written by a content
// provider that then closes gracefully and returns false: httplib takes that as a failed write
// and ends the connection instead of reading on.
void AdmissionServer::refuse(const httplib::Request& request, httplib::Response& response,
                             int status, const std::string& message) const {
  response.status = status;
  response.set_header("Connection", "close");
  const SSL* ssl = request.ssl;
  const int fd = socketOf(request);
  const std::string text = message + "\n";
  const std::chrono::milliseconds linger = options_.refusal_linger;
  response.set_content_provider(
      text.size(), kText,
      [text, ssl, fd, linger, clock = clock_](size_t offset, size_t, httplib::DataSink& sink) {
        sink.write(text.data() + offset, text.size() - offset);
        // The logger that releases the held answer runs only after this returns.
        if (ssl != nullptr) {
          releaseWrites(*ssl);
        }
        if (fd >= 0) {
          lingeringClose(fd, linger, *clock);
        }
        return false;
      });
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
  ReviewOutcome outcome = review_(request.body, policy ? *policy : no_policy_);
  response.status = outcome.http_status;
  metrics_.recordReview(outcome, clock_->now() - start);
  // What set_content does, without copying the body.
  response.set_header("Content-Type", outcome.http_status == 200 ? "application/json" : kText);
  response.body = std::move(outcome.body);

  if (outcome.http_status != 200) {
    logger_.warn("bad admission request", {{"error", response.body}});
  } else if (!outcome.applied.empty() || !outcome.warnings.empty()) {
    logger_.info("pod reviewed", {{"uid", outcome.uid},
                                  {"pod", outcome.pod},
                                  {"outcome", outcome.outcome},
                                  {"applied", joined(outcome.applied)},
                                  {"warnings", joined(outcome.warnings)}});
  } else {
    logger_.debug("pod reviewed", {{"uid", outcome.uid},
                                   {"pod", outcome.pod},
                                   {"outcome", outcome.outcome},
                                   {"skipped", outcome.skipped}});
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
  if (::listen(listen_fd_, options_.listen_backlog) != 0) {
    return makeError("cannot raise the listen backlog of " + options_.host + ":" +
                     std::to_string(port_) + " to " + std::to_string(options_.listen_backlog));
  }
  return Ok{};
}

bool AdmissionServer::serve() {
  watchdog_.start();
  const bool served = server_->listen_after_bind();
  watchdog_.stop();
  return served;
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
  metrics_.setConnections({queue_stats_->threads, queue_stats_->busy, watchdog_.open(),
                           queue_stats_->refused, watchdog_.cut()});
  return registry_.render();
}

} // namespace kube_rdma
