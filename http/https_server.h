#pragma once

#include <openssl/ssl.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/util/result.h"

// An event-driven HTTPS/1.1 server (Boost.Beast over Asio and OpenSSL): a few threads, each
// running an event loop for its share of the connections, so a connection costs memory only while
// it is open and no CPU while it is idle. docs/webhook.md "Connections".
namespace kube_rdma {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8443; // 0: any free port (tests)
  // Connections open at once. At the cap the server stops accepting: new ones wait in the
  // listen backlog (bounded by the kernel) until one closes.
  size_t max_connections = 1024;
  // The kernel caps it at net.core.somaxconn.
  int listen_backlog = 1024;
  // A request's header, request line included.
  size_t max_header_bytes = size_t{16} * 1024;
  // The API server caps requests at 3 MiB; twice that, like Istio.
  size_t max_body_bytes = size_t{6} * 1024 * 1024;
  // A TLS handshake not finished by then is cut.
  std::chrono::milliseconds handshake_timeout{5000};
  // A connection waiting for its next request is closed after this long.
  std::chrono::seconds keep_alive_timeout{5};
  // A connection's next request must be read whole within keep_alive_timeout + request_timeout
  // of the connection's start or its last answer, however its bytes trickle in (slow clients).
  std::chrono::milliseconds request_timeout{5000};
  // Below the MutatingWebhookConfiguration's timeoutSeconds (5 in manifests/).
  std::chrono::milliseconds write_timeout{3000};
  // After a refusal or a last answer the server half-closes and discards what the client still
  // sends for at most this long, so the client reads the answer rather than a reset.
  std::chrono::milliseconds refusal_linger{1000};
  // The requests whose answer may wait on something slow (a read from the API server): they are
  // answered on a thread of a pool of `blocking_threads`, so their wait holds up no event loop.
  // Every other request is answered inline. Unset: every request inline.
  std::function<bool(const HttpRequest&)> may_block;
  size_t blocking_threads = 4;
};

using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// The answer to a whole request, computed inline on the thread that read it. A response with
// keep_alive(false) closes its connection after it is sent.
using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;
HttpResponse textResponse(boost::beast::http::status status, std::string body,
                          const char* content_type = "text/plain");

class HttpsConnection;

// The connections open now: the cap on them, how many the request deadline cut, and stopping
// them all. Shared by the listener and the connections, which run on different threads.
class ConnectionRegistry {
public:
  explicit ConnectionRegistry(size_t max_connections) : max_connections_(max_connections) {}

  // Tracks a new connection; false when the cap is reached and `on_room` will be called (once)
  // when a connection closes.
  bool add(const std::shared_ptr<HttpsConnection>& connection, std::function<void()> on_room);
  void remove(const HttpsConnection* connection);
  // From now on every connection closes after its request in flight, and idle ones at once.
  void stopAll();

  bool stopping() const { return stopping_; }
  void countCut() { ++cut_; }
  size_t open() const;
  uint64_t cut() const { return cut_; }

private:
  const size_t max_connections_;
  mutable std::mutex mutex_;
  std::unordered_map<const HttpsConnection*, std::weak_ptr<HttpsConnection>> connections_;
  std::function<void()> on_room_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> cut_{0};
};

class HttpsServer {
public:
  // `configure_tls` sets up the TLS context (certificates, versions, ciphers); false: unusable.
  HttpsServer(ServerOptions options, const std::function<bool(SSL_CTX&)>& configure_tls,
              RequestHandler handler);
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  // Listens; the port is known afterwards.
  Status bind();
  int port() const { return port_; }
  // After bind(): runs the server threads (this one among them) until stop() and every connection
  // is closed.
  void serve();
  // Stops accepting; requests in flight are answered, then their connections close, idle ones
  // close at once. serve() returns when none is left.
  void stop();

  size_t openConnections() const { return registry_.open(); }
  uint64_t cutConnections() const { return registry_.cut(); }

private:
  void accept();
  void onAccept(const boost::system::error_code& error, boost::asio::ip::tcp::socket socket);

  using Loop = boost::asio::io_context;

  // Declared before loops_: the connections that the loops destroy last refer to them.
  const ServerOptions options_;
  const RequestHandler handler_;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> tls_;
  bool tls_ok_ = false;
  ConnectionRegistry registry_;
  // One event loop per server thread; a connection lives on one loop, so its steps run on one
  // thread and are never handed to another, which would have to be woken. Connections are dealt
  // to the loops in turn.
  std::vector<std::unique_ptr<Loop>> loops_;
  // Keeps loops without connections running until stop().
  std::vector<boost::asio::executor_work_guard<Loop::executor_type>> keep_running_;
  // Answers options_.may_block picks; after loops_, so it is joined before they go (its tasks
  // post their answers to the loops). Null when may_block is unset.
  std::unique_ptr<boost::asio::thread_pool> blocking_;
  size_t next_loop_ = 0;
  // On the first loop, with stop() posted to it.
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;
  int port_ = 0;
};

} // namespace kube_rdma
