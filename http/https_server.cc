#include "http/https_server.h"

#include <sched.h>

#include <boost/asio/post.hpp>

#include <thread>
#include <vector>

#include "http/https_connection.h"

namespace kube_rdma {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

constexpr std::chrono::milliseconds kAcceptRetry{100};

// One server thread per core this process may run on (its CPU affinity), at least 2, so one long
// request does not hold up every other one.
size_t serverThreads() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
  return std::max<size_t>(2, static_cast<size_t>(usable));
}

// Each loop is run by one thread only: the hint lets Asio skip what sharing one would need.
std::vector<std::unique_ptr<asio::io_context>> makeLoops(size_t count) {
  std::vector<std::unique_ptr<asio::io_context>> loops;
  for (size_t i = 0; i < count; ++i) {
    loops.push_back(std::make_unique<asio::io_context>(1));
  }
  return loops;
}

} // namespace

bool ConnectionRegistry::add(const std::shared_ptr<HttpsConnection>& connection,
                             std::function<void()> on_room) {
  const std::lock_guard<std::mutex> lock(mutex_);
  connections_.emplace(connection.get(), connection);
  if (connections_.size() < max_connections_) {
    return true;
  }
  on_room_ = std::move(on_room);
  return false;
}

void ConnectionRegistry::remove(const HttpsConnection* connection) {
  std::function<void()> on_room;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    connections_.erase(connection);
    on_room.swap(on_room_);
  }
  if (on_room) {
    on_room();
  }
}

void ConnectionRegistry::stopAll() {
  std::vector<std::shared_ptr<HttpsConnection>> open;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    on_room_ = nullptr;
    for (const auto& [key, connection] : connections_) {
      if (std::shared_ptr<HttpsConnection> alive = connection.lock()) {
        open.push_back(std::move(alive));
      }
    }
  }
  for (const std::shared_ptr<HttpsConnection>& connection : open) {
    connection->stop();
  }
}

size_t ConnectionRegistry::open() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return connections_.size();
}

HttpResponse textResponse(http::status status, std::string body, const char* content_type) {
  HttpResponse response{status, 11};
  response.set(http::field::content_type, content_type);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

HttpsServer::HttpsServer(ServerOptions options, const std::function<bool(SSL_CTX&)>& configure_tls,
                         RequestHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)),
      tls_(SSL_CTX_new(TLS_server_method()), SSL_CTX_free), registry_(options_.max_connections),
      loops_(makeLoops(serverThreads())), acceptor_(*loops_.front()), retry_(*loops_.front()) {
  for (const std::unique_ptr<Loop>& loop : loops_) {
    keep_running_.push_back(asio::make_work_guard(*loop));
  }
  if (options_.may_block) {
    blocking_ = std::make_unique<asio::thread_pool>(std::max<size_t>(1, options_.blocking_threads));
  }
  if (tls_) {
    // A connection waiting for its next request gives OpenSSL's read and write buffers (about
    // 34 KiB) back: held connections would otherwise keep them for nothing (docs/webhook.md).
    SSL_CTX_set_mode(tls_.get(), SSL_MODE_RELEASE_BUFFERS);
    // A record's header and body in one recv() rather than two, and a request of several
    // records in as few as arrived.
    SSL_CTX_set_read_ahead(tls_.get(), 1);
    tls_ok_ = configure_tls(*tls_);
  }
}

Status HttpsServer::bind() {
  if (!tls_ok_) {
    return makeError("TLS set-up failed (OpenSSL rejected the TLS settings)");
  }
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  error_code error;
  tcp::resolver resolver(*loops_.front());
  const auto endpoints =
      resolver.resolve(options_.host, std::to_string(options_.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, error);
  if (error || endpoints.empty()) {
    return makeError("cannot resolve " + where + ": " + error.message());
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  if (acceptor_.open(endpoint.protocol(), error) ||
      acceptor_.set_option(tcp::acceptor::reuse_address(true), error) ||
      acceptor_.bind(endpoint, error) || acceptor_.listen(options_.listen_backlog, error)) {
    return makeError("cannot listen on " + where + ": " + error.message());
  }
  port_ = acceptor_.local_endpoint().port();
  asio::post(acceptor_.get_executor(), [this] { accept(); });
  return Ok{};
}

void HttpsServer::accept() {
  Loop& loop = *loops_[next_loop_++ % loops_.size()];
  acceptor_.async_accept(
      loop, [this](const error_code& error, tcp::socket s) { onAccept(error, std::move(s)); });
}

void HttpsServer::onAccept(const error_code& error, tcp::socket socket) {
  if (registry_.stopping() || !acceptor_.is_open()) {
    return;
  }
  if (error) {
    // Out of descriptors, typically: try again shortly rather than spin on the error.
    retry_.expires_after(kAcceptRetry);
    retry_.async_wait([this](const error_code& cancelled) {
      if (!cancelled) {
        accept();
      }
    });
    return;
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto connection = std::make_shared<HttpsConnection>(std::move(socket), *tls_, options_, handler_,
                                                      registry_, blocking_.get());
  const bool room = registry_.add(
      connection, [this] { asio::post(acceptor_.get_executor(), [this] { accept(); }); });
  connection->start();
  if (room) {
    accept();
  }
  // Otherwise the registry resumes accepting when a connection closes.
}

void HttpsServer::serve() {
  std::vector<std::thread> threads;
  for (size_t i = 1; i < loops_.size(); ++i) {
    threads.emplace_back([loop = loops_[i].get()] { loop->run(); });
  }
  loops_.front()->run();
  for (std::thread& thread : threads) {
    thread.join();
  }
}

void HttpsServer::stop() {
  asio::post(acceptor_.get_executor(), [this] {
    error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    // Each loop returns once its last connection is gone.
    for (auto& guard : keep_running_) {
      guard.reset();
    }
  });
  registry_.stopAll();
}

} // namespace kube_rdma
