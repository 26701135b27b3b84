#include "webhook/connection_watchdog.h"

#include <sys/socket.h>

#include "webhook/elastic_task_queue.h"

namespace kube_rdma {
namespace {

// Where the watchdog hangs on each SSL_CTX (for the info callback) and on each SSL (so its free
// callback knows which watchdog to tell). Process-wide indexes, made once.
int contextIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int connectionIndex(CRYPTO_EX_free* on_free) {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, on_free);
  return index;
}

} // namespace

ConnectionWatchdog::ConnectionWatchdog(std::chrono::milliseconds limit, ClockPtr clock,
                                       Logger& logger, std::chrono::milliseconds tick)
    : limit_(limit), tick_(tick), clock_(std::move(clock)), logger_(logger), deadlines_(limit) {}

ConnectionWatchdog::~ConnectionWatchdog() {
  stop();
}

bool ConnectionWatchdog::install(SSL_CTX& ctx) {
  if (contextIndex() < 0 || connectionIndex(onFree) < 0 ||
      SSL_CTX_set_ex_data(&ctx, contextIndex(), this) != 1) {
    return false;
  }
  SSL_CTX_set_info_callback(&ctx, onInfo);
  return true;
}

void ConnectionWatchdog::onInfo(const SSL* ssl, int where, int /*ret*/) {
  if ((where & SSL_CB_HANDSHAKE_START) == 0) {
    return;
  }
  const int fd = SSL_get_fd(ssl);
  if (ElasticTaskQueue::runningOverflowJob()) {
    // No thread was free for this connection: the handshake's first read now fails.
    ::shutdown(fd, SHUT_RDWR);
    return;
  }
  auto* self =
      static_cast<ConnectionWatchdog*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), contextIndex()));
  // TLS 1.3 reports post-handshake messages as handshake starts too; the first one counts.
  if (self == nullptr || SSL_get_ex_data(ssl, connectionIndex(onFree)) != nullptr) {
    return;
  }
  // The callback gets a const SSL*; ex_data is the connection's own slot for exactly this.
  SSL_set_ex_data(const_cast<SSL*>(ssl), connectionIndex(onFree), self);
  self->deadlines_.opened(ssl, fd, self->clock_->now());
}

void ConnectionWatchdog::onFree(void* parent, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  if (ptr != nullptr) {
    static_cast<ConnectionWatchdog*>(ptr)->deadlines_.closed(parent);
  }
}

void ConnectionWatchdog::answered(const SSL* ssl) {
  if (ssl != nullptr) {
    deadlines_.answered(ssl, clock_->now());
  }
}

void ConnectionWatchdog::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!thread_.joinable()) {
    stopping_ = false;
    thread_ = std::thread([this] { run(); });
  }
}

void ConnectionWatchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void ConnectionWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, tick_, [this] { return stopping_; })) {
    lock.unlock();
    const size_t cut = deadlines_.cutExpired(clock_->now(), [](int fd) {
      // Both directions: a blocked read or write returns at once and httplib closes.
      ::shutdown(fd, SHUT_RDWR);
    });
    lock.lock();
    if (cut > 0) {
      cut_ += cut;
      logger_.warn(
          "connections cut: no request finished in time",
          {{"connections", std::to_string(cut)}, {"limit_ms", std::to_string(limit_.count())}});
    }
  }
}

} // namespace kube_rdma
