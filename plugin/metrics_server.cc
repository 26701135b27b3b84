#include "plugin/metrics_server.h"

#include <charconv>
#include <utility>

#include <httplib.h>

namespace kube_rdma {

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address,
                                                            RenderFn render, HealthFn health) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return makeError("--metrics-address '" + address + "' is not HOST:PORT");
  }
  std::string host = address.substr(0, colon);
  if (host.empty()) {
    host = "0.0.0.0";
  }
  int port = -1;
  const std::string port_text = address.substr(colon + 1);
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return makeError("--metrics-address '" + address + "' has no valid port");
  }
  auto server = std::make_unique<httplib::Server>();
  server->Get("/metrics",
              [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
                res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
              });
  server->Get("/healthz",
              [health = std::move(health)](const httplib::Request&, httplib::Response& res) {
                auto status = health();
                res.status = status ? 200 : 503;
                res.set_content(status ? *status : status.error().message, "text/plain");
              });
  const int bound =
      port == 0 ? server->bind_to_any_port(host) : (server->bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return makeError("cannot listen on --metrics-address " + address);
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(server), bound));
}

MetricsServer::MetricsServer(std::unique_ptr<httplib::Server> server, int port)
    : server_(std::move(server)), port_(port), thread_([this] { server_->listen_after_bind(); }) {}

MetricsServer::~MetricsServer() {
  server_->stop();
  thread_.join();
}

} // namespace kube_rdma
