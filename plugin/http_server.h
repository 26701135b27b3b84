#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/result.h"
#include "plugin/http_message.h"

namespace kube_rdma {

struct HttpServerLimits {
  size_t max_head_bytes = 8192;                    // larger heads get 431
  std::chrono::milliseconds request_timeout{5000}; // accept until the answer is sent
  size_t max_connections = 16;                     // more wait in the listen backlog
};

// A small plain-HTTP/1.1 server for GET endpoints: one thread multiplexes every connection with
// poll(), one request per connection (`Connection: close`). Not GET: 405; malformed head: 400;
// head over the limit: 431; no complete request within the timeout: 408. A slow client holds
// one connection slot, never the thread. The handler runs on the server's thread.
class HttpServer {
public:
  /**
   * @param address "HOST:PORT" (parseListenAddress); port 0 picks a free one.
   * @param clock for the per-connection deadlines; must outlive the server.
   * @param logger must outlive the server.
   */
  static Result<std::unique_ptr<HttpServer>> start(const std::string& address, HttpHandler handler,
                                                   const Clock& clock, Logger& logger,
                                                   HttpServerLimits limits = {});
  // Wakes the thread, closes every connection and the listener, joins.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

private:
  struct Connection;

  HttpServer(int listen_fd, int wake_fd, int port, HttpHandler handler, const Clock& clock,
             Logger& logger, HttpServerLimits limits);
  void run();
  // False when accept failed for lack of resources (EMFILE, ENOBUFS...): the caller pauses it.
  bool acceptAll(std::vector<Connection>& connections);
  // Each returns false when the connection is finished and can be closed.
  bool onReadable(Connection& connection);
  bool onWritable(Connection& connection);
  void answer(Connection& connection, const HttpResponse& response);
  HttpResponse respond(std::string_view head) const; // respondToHead, handler failures as 500

  const int listen_fd_;
  const int wake_fd_; // eventfd: the destructor's stop signal, so idle poll() has no timeout
  const int port_;
  const HttpHandler handler_;
  const Clock& clock_;
  Logger& logger_;
  const HttpServerLimits limits_;
  std::thread thread_;
};
using HttpServerPtr = std::unique_ptr<HttpServer>;

} // namespace kube_rdma
