#include "http/metrics_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <utility>

#include "common/listen_address.h"

namespace kube_rdma {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

Result<std::unique_ptr<MetricsServer>>
MetricsServer::start(const std::string& address, RenderFn render, HealthFn health, HealthFn ready) {
  auto listen = parseListenAddress(address);
  if (!listen) {
    return makeError("--metrics-address: " + listen.error().message);
  }
  auto impl = std::make_unique<Impl>();
  // httplib's default adds SO_REUSEPORT, which would let a second plugin (or anything else)
  // share the port and take half the scrapes instead of failing to start.
  impl->server.set_socket_options([](int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Prometheus and the kubelet's probes: one or two requests at a time.
  impl->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  impl->server.Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                            httplib::Response& response) {
    response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const auto probe = [](HealthFn judge) {
    return [judge = std::move(judge)](const httplib::Request&, httplib::Response& response) {
      auto status = judge();
      response.status = status ? 200 : 503;
      response.set_content(status ? *status : status.error().message + "\n",
                           "text/plain; charset=utf-8");
    };
  };
  impl->server.Get("/healthz", probe(std::move(health)));
  if (ready) {
    impl->server.Get("/readyz", probe(std::move(ready)));
  }
  impl->port = listen->port == 0
                   ? impl->server.bind_to_any_port(listen->host)
                   : (impl->server.bind_to_port(listen->host, listen->port) ? listen->port : -1);
  if (impl->port < 0) {
    return makeError("--metrics-address: cannot listen on " + address);
  }
  Impl& started = *impl;
  started.thread = std::thread([&started] { started.server.listen_after_bind(); });
  // stop() does nothing before the server runs: the destructor could otherwise join forever.
  while (!started.server.is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  impl_->thread.join();
}

int MetricsServer::port() const {
  return impl_->port;
}

} // namespace kube_rdma
