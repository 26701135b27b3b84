// The OpenSSL side of the watchdog with real SSL objects on socket pairs and a fake clock: which
// connections it follows, when it cuts them, and that it forgets them on SSL_free.
#include "webhook/connection_watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "webhook/elastic_task_queue.h"
#include "test/webhook/eventually.h"

namespace kube_rdma {
namespace {

using namespace std::chrono_literals;

class FakeClock final : public Clock {
public:
  std::chrono::steady_clock::time_point now() const override { return now_.load(); }
  std::chrono::system_clock::time_point wallNow() const override { return {}; }
  void advance(std::chrono::milliseconds by) { now_ = now_.load() + by; }

private:
  std::atomic<std::chrono::steady_clock::time_point> now_{};
};

// One server-side TLS connection whose handshake has started (it waits for a ClientHello that
// never comes), and the client's end of its socket.
struct Connection {
  explicit Connection(SSL_CTX* ctx) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    server_fd = fds[0];
    client_fd = fds[1];
    ::fcntl(server_fd, F_SETFL, O_NONBLOCK);
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, server_fd);
  }
  ~Connection() {
    free();
    ::close(server_fd);
    ::close(client_fd);
  }
  void startHandshake() { SSL_accept(ssl); }
  void free() {
    SSL_free(ssl);
    ssl = nullptr;
  }
  // True once the server side was shut down: the client reads end of file.
  bool cut() const {
    char byte;
    return ::recv(client_fd, &byte, 1, MSG_DONTWAIT) == 0;
  }

  int server_fd = -1;
  int client_fd = -1;
  SSL* ssl = nullptr;
};

class ConnectionWatchdogTest : public testing::Test {
protected:
  // A handshake on a socket shut down under it may write an alert: EPIPE, not a signal (httplib's
  // server ignores SIGPIPE the same way).
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  ConnectionWatchdogTest() { EXPECT_TRUE(watchdog_.install(*ctx_)); }
  ~ConnectionWatchdogTest() override {
    watchdog_.stop();
    SSL_CTX_free(ctx_);
  }

  SSL_CTX* ctx_ = SSL_CTX_new(TLS_server_method());
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::ostringstream log_;
  Logger logger_{log_};
  ConnectionWatchdog watchdog_{10s, clock_, logger_, 1ms};
};

TEST_F(ConnectionWatchdogTest, FollowsAConnectionFromItsHandshakeStartUntilSslFree) {
  Connection connection(ctx_);
  EXPECT_EQ(watchdog_.open(), 0u);
  connection.startHandshake();
  EXPECT_EQ(watchdog_.open(), 1u);
  connection.startHandshake(); // the handshake goes on: still one connection
  EXPECT_EQ(watchdog_.open(), 1u);
  connection.free();
  EXPECT_EQ(watchdog_.open(), 0u);
}

TEST_F(ConnectionWatchdogTest, CutsAConnectionPastItsLimitAndOnlyThatOne) {
  Connection slow(ctx_);
  slow.startHandshake();
  clock_->advance(6s);
  Connection answered(ctx_);
  answered.startHandshake();
  clock_->advance(3s);
  watchdog_.answered(answered.ssl);
  watchdog_.start();
  clock_->advance(1s + 1ms); // slow: 10 s + 1 ms; answered: 1 s since its answer
  EXPECT_TRUE(eventually([&] { return watchdog_.cut() == 1; }));
  EXPECT_TRUE(slow.cut());
  EXPECT_FALSE(answered.cut());
  watchdog_.stop(); // its thread no longer writes the log
  EXPECT_NE(log_.str().find("connections cut"), std::string::npos) << log_.str();
}

TEST_F(ConnectionWatchdogTest, AConnectionFreedBeforeItsLimitIsNeverCut) {
  auto first = std::make_unique<Connection>(ctx_);
  first->startHandshake();
  first->free();
  watchdog_.start();
  clock_->advance(20s);
  // A later connection is cut on its own time; the freed one counts for nothing.
  Connection second(ctx_);
  second.startHandshake();
  clock_->advance(10s + 1ms);
  EXPECT_TRUE(eventually([&] { return watchdog_.cut() == 1; }));
  EXPECT_TRUE(second.cut());
  EXPECT_FALSE(first->cut());
}

TEST_F(ConnectionWatchdogTest, AConnectionWithoutAFreeThreadIsEndedAtItsHandshakeStart) {
  auto stats = std::make_shared<TaskQueueStats>();
  // Declared before the queue, whose threads use them until it is destroyed.
  std::atomic<bool> release{false};
  std::atomic<bool> done{false};
  Connection refused(ctx_);
  ElasticTaskQueue queue({1, 1, 60s}, stats);
  queue.enqueue([&] {
    while (!release) {
      std::this_thread::sleep_for(1ms);
    }
  });
  queue.enqueue([&] {
    refused.startHandshake();
    done = true;
  });
  EXPECT_TRUE(eventually([&] { return done.load(); }));
  EXPECT_TRUE(refused.cut());
  EXPECT_EQ(watchdog_.open(), 0u) << "a refused connection is not followed";
  EXPECT_EQ(stats->refused, 1u);
  release = true;
}

} // namespace
} // namespace kube_rdma
