#include "http/metrics_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "common/util/listen_address.h"

namespace kube_rdma {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<int> port = 0;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;              // guarded by mutex
  bool bound = false;                 // guarded by mutex: the thread listens or is about to
  std::atomic<bool> finished = false; // the thread returned from listen_after_bind()

  // Listens on the bound socket; returns when the server is stopped.
  void listen() {
    server.listen_after_bind();
    finished = true;
  }
};

namespace {

void route(httplib::Server& server, MetricsServer::RenderFn render, MetricsServer::HealthFn health,
           MetricsServer::HealthFn ready) {
  // httplib's default adds SO_REUSEPORT, which would let a second plugin (or anything else)
  // share the port and take half the scrapes instead of failing to start.
  server.set_socket_options([](int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Prometheus and the kubelet's probes: one or two requests at a time.
  server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  server.Get("/metrics",
             [render = std::move(render)](const httplib::Request&, httplib::Response& response) {
               response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
             });
  const auto probe = [](MetricsServer::HealthFn judge) {
    return [judge = std::move(judge)](const httplib::Request&, httplib::Response& response) {
      auto status = judge();
      response.status = status ? 200 : 503;
      response.set_content(status ? *status : status.error().message + "\n",
                           "text/plain; charset=utf-8");
    };
  };
  server.Get("/healthz", probe(std::move(health)));
  if (ready) {
    server.Get("/readyz", probe(std::move(ready)));
  }
}

struct Bound {
  int port = -1;
  int error = 0; // errno of the failed bind
};

Bound bindPort(httplib::Server& server, const ListenAddress& listen) {
  errno = 0;
  if (listen.port == 0) {
    const int port = server.bind_to_any_port(listen.host);
    return {port, port < 0 ? errno : 0};
  }
  if (server.bind_to_port(listen.host, listen.port)) {
    return {listen.port, 0};
  }
  return {-1, errno};
}

Error cannotListen(const std::string& address, int error) {
  return makeError("--metrics-address: cannot listen on " + address + ": " +
                   (error != 0 ? std::strerror(error) : "the address cannot be bound"));
}

} // namespace

Result<std::unique_ptr<MetricsServer>>
MetricsServer::start(const std::string& address, RenderFn render, HealthFn health, HealthFn ready) {
  return open(address, nullptr, {}, std::move(render), std::move(health), std::move(ready));
}

Result<std::unique_ptr<MetricsServer>>
MetricsServer::startWhenPortIsFree(const std::string& address, Logger& logger,
                                   std::chrono::milliseconds retry, RenderFn render,
                                   HealthFn health, HealthFn ready) {
  return open(address, &logger, retry, std::move(render), std::move(health), std::move(ready));
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::open(const std::string& address,
                                                           Logger* wait_logger,
                                                           std::chrono::milliseconds retry,
                                                           RenderFn render, HealthFn health,
                                                           HealthFn ready) {
  auto listen = parseListenAddress(address);
  if (!listen) {
    return makeError("--metrics-address: " + listen.error().message);
  }
  auto impl = std::make_unique<Impl>();
  route(impl->server, std::move(render), std::move(health), std::move(ready));
  const Bound first = bindPort(impl->server, *listen);
  const bool wait = first.port < 0 && first.error == EADDRINUSE && wait_logger != nullptr;
  if (first.port < 0 && !wait) {
    return cannotListen(address, first.error);
  }
  Impl& started = *impl;
  if (!wait) {
    started.port = first.port;
    started.bound = true;
    started.thread = std::thread([&started] { started.listen(); });
    if (wait_logger != nullptr) {
      wait_logger->info("serving /metrics and /healthz", {{"port", std::to_string(first.port)}});
    }
    return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
  }
  Logger& logger = *wait_logger;
  logger.error("another program holds the metrics port: /metrics and /healthz wait for it, the "
               "devices are served meanwhile; choose a free port with --metrics-address",
               {{"address", address},
                {"retry_every", std::to_string(retry.count()) + "ms"},
                {"error", std::strerror(first.error)}});
  started.thread = std::thread([&started, &logger, listen = *listen, address, retry] {
    std::unique_lock<std::mutex> lock(started.mutex);
    int last_error = EADDRINUSE;
    while (!started.wake.wait_for(lock, retry, [&started] { return started.stopping; })) {
      const Bound bound = bindPort(started.server, listen);
      if (bound.port < 0) {
        if (bound.error != last_error) { // said once per cause, not every retry
          logger.error("cannot listen on the metrics port",
                       {{"address", address}, {"error", std::strerror(bound.error)}});
          last_error = bound.error;
        }
        continue;
      }
      started.port = bound.port;
      started.bound = true;
      lock.unlock();
      logger.info("the metrics port is free: serving /metrics and /healthz",
                  {{"port", std::to_string(bound.port)}});
      started.listen();
      return;
    }
  });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  bool bound = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
    bound = impl_->bound;
  }
  impl_->wake.notify_all();
  if (bound) {
    // stop() does nothing before the server runs: joining could otherwise wait forever.
    while (!impl_->server.is_running() && !impl_->finished) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->server.stop();
  }
  impl_->thread.join();
}

int MetricsServer::port() const {
  return impl_->port;
}

} // namespace kube_rdma
