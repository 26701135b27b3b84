#include "webhook/admission_server.h"

#include <openssl/bio.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/strings.h"

namespace kube_rdma {
namespace {

constexpr const char* kText = "text/plain";

using Connections = AdmissionServer::Connections;
using Deadline = std::chrono::steady_clock::time_point;

// cpp-httplib runs each connection as one job that holds its thread for the connection's whole
// keep-alive life. A thread starts when a connection finds none free, up to `max_threads`, and
// then stays: no thread start per request burst, and no threads at rest for connections that
// never come. Connections beyond the cap wait for a free thread.
class ConnectionThreads final : public httplib::TaskQueue {
public:
  ConnectionThreads(size_t max_threads, std::shared_ptr<Connections> connections)
      : max_threads_(max_threads), connections_(std::move(connections)) {}
  ~ConnectionThreads() override { shutdown(); }
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++connections_->open;
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_ && threads_.size() < max_threads_) {
      threads_.emplace_back([this] { work(); });
    } else {
      ready_.notify_one();
    }
  }

  // Serves the connections already accepted, then joins every thread.
  void shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      threads.swap(threads_);
    }
    ready_.notify_all();
    for (std::thread& thread : threads) {
      thread.join();
    }
  }

private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ++idle_;
      ready_.wait(lock, [this] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (jobs_.empty()) {
        return;
      }
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      --connections_->open;
      lock.lock();
    }
  }

  const size_t max_threads_;
  std::shared_ptr<Connections> connections_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

// A connection lives on one thread from accept to close, so its request deadline can be the
// thread's own: set when its handshake starts and after each answer, checked before each read
// from its socket (a trickle of bytes, however split into TLS records, reads again and again).
thread_local Deadline request_deadline;

long checkDeadline(BIO* bio, int oper, const char*, size_t, int, long, int ret, size_t*) {
  if (oper == BIO_CB_READ && std::chrono::steady_clock::now() > request_deadline) {
    ++reinterpret_cast<Connections*>(BIO_get_callback_arg(bio))->cut;
    request_deadline = Deadline::max();
    // Both directions: this read and any write fail, and httplib closes the connection.
    ::shutdown(static_cast<int>(BIO_get_fd(bio, nullptr)), SHUT_RDWR);
  }
  return ret;
}

void onHandshakeStart(const SSL* ssl, int where, int) {
  BIO* bio = SSL_get_rbio(ssl);
  // TLS 1.3 reports post-handshake messages as handshake starts too: only the first counts.
  if ((where & SSL_CB_HANDSHAKE_START) == 0 || bio == nullptr ||
      BIO_get_callback_ex(bio) == checkDeadline) {
    return;
  }
  auto* connections = static_cast<Connections*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  request_deadline = std::chrono::steady_clock::now() + connections->limit;
  BIO_set_callback_arg(bio, reinterpret_cast<char*>(connections));
  BIO_set_callback_ex(bio, checkDeadline);
}

// Half-closes `fd` and discards what the client still sends until it closes or `linger` passes:
// closing a socket with unread bytes makes the kernel send a reset, and a client still writing
// its body could lose the answer already sent.
void lingeringClose(int fd, std::chrono::milliseconds linger) {
  ::shutdown(fd, SHUT_WR);
  char discard[16384];
  const Deadline end = std::chrono::steady_clock::now() + linger;
  for (auto now = std::chrono::steady_clock::now(); now < end;
       now = std::chrono::steady_clock::now()) {
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

} // namespace

AdmissionServer::AdmissionServer(ServerOptions options, CertificateStore& certificates,
                                 PolicyStore& policies, MetricsRegistry& registry,
                                 WebhookMetrics& metrics, ClockPtr clock, Logger& logger,
                                 Reviewer review)
    : options_(std::move(options)), certificates_(certificates), policies_(policies),
      registry_(registry), metrics_(metrics), clock_(std::move(clock)), logger_(logger),
      review_(std::move(review)) {
  connections_->limit =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.keep_alive_timeout) +
      options_.request_timeout;
  server_ = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
    // A connection waiting for its next request gives its read and write buffers (about 34 KiB)
    // back: held connections would otherwise keep them for nothing (docs/webhook.md).
    SSL_CTX_set_mode(&ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_app_data(&ctx, connections_.get());
    SSL_CTX_set_info_callback(&ctx, onHandshakeStart);
    return certificates_.configure(ctx);
  });
  server_->new_task_queue = [this] {
    return new ConnectionThreads(options_.max_connections, connections_);
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
  server_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    request_deadline = std::chrono::steady_clock::now() + connections_->limit;
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
  const int fd = request.ssl != nullptr ? SSL_get_fd(request.ssl) : -1;
  const std::string text = message + "\n";
  const std::chrono::milliseconds linger = options_.refusal_linger;
  response.set_content_provider(text.size(), kText,
                                [text, fd, linger](size_t offset, size_t, httplib::DataSink& sink) {
                                  sink.write(text.data() + offset, text.size() - offset);
                                  if (fd >= 0) {
                                    lingeringClose(fd, linger);
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
  why = joinStrings(missing, "; ");
  return missing.empty();
}

std::string AdmissionServer::renderMetrics() {
  if (std::shared_ptr<const ServingCertificate> pair = certificates_.current()) {
    metrics_.setCertificateExpiry(
        std::chrono::duration<double>(pair->notAfter() - clock_->wallNow()).count());
  }
  metrics_.setPolicyGeneration(policies_.generation());
  metrics_.setConnections(connections_->open, connections_->cut);
  return registry_.render();
}

} // namespace kube_rdma
