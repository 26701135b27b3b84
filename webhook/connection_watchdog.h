#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "webhook/connection_deadlines.h"

// Ends TLS connections that take too long to finish a request (slow clients), and connections the
// task queue had no thread for. cpp-httplib 0.11.4 offers no hook per connection, so this hangs
// off OpenSSL: the info callback sees each handshake start (the SSL* and its socket), an SSL
// ex_data slot's free callback sees SSL_free (httplib frees the SSL before it closes the socket),
// and the handler reports each answered request. A thread wakes every `tick` and shuts down the
// socket of each connection past its deadline; httplib's blocked read then fails and it closes.
namespace kube_rdma {

class ConnectionWatchdog {
public:
  // `limit`: how long a connection may go without an answered request (from its handshake start
  // or its last answer).
  ConnectionWatchdog(std::chrono::milliseconds limit, ClockPtr clock, Logger& logger,
                     std::chrono::milliseconds tick = std::chrono::milliseconds(250));
  ~ConnectionWatchdog();
  ConnectionWatchdog(const ConnectionWatchdog&) = delete;
  ConnectionWatchdog& operator=(const ConnectionWatchdog&) = delete;

  // For the SSL_CTX set-up callback; the watchdog must outlive the context's connections.
  bool install(SSL_CTX& ctx);
  // A request on this connection was answered.
  void answered(const SSL* ssl);
  // Starts and stops the thread that cuts connections past their deadline.
  void start();
  void stop();

  uint64_t cut() const { return cut_; }
  size_t open() const { return deadlines_.tracked(); }

private:
  static void onInfo(const SSL* ssl, int where, int ret);
  static void onFree(void* parent, void* ptr, CRYPTO_EX_DATA* data, int index, long argl,
                     void* argp);
  void run();

  const std::chrono::milliseconds limit_;
  const std::chrono::milliseconds tick_;
  ClockPtr clock_;
  Logger& logger_;
  ConnectionDeadlines deadlines_;
  std::atomic<uint64_t> cut_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace kube_rdma
