#include "plugin/metrics_server.h"

#include <utility>

namespace kube_rdma {

HttpResponse metricsEndpoint(const HttpRequestHead& request, const MetricsServer::RenderFn& render,
                             const MetricsServer::HealthFn& health) {
  if (request.path == "/metrics") {
    HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = render();
    return response;
  }
  if (request.path == "/healthz") {
    auto status = health();
    return status ? plainResponse(200, *status) : plainResponse(503, status.error().message);
  }
  return plainResponse(404, "no such endpoint " + request.path + "; try /metrics or /healthz");
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address,
                                                            RenderFn render, HealthFn health,
                                                            const Clock& clock, Logger& logger) {
  auto server = HttpServer::start(
      address,
      [render = std::move(render), health = std::move(health)](const HttpRequestHead& request) {
        return metricsEndpoint(request, render, health);
      },
      clock, logger);
  if (!server) {
    return makeError("--metrics-address: " + server.error().message);
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(*server)));
}

} // namespace kube_rdma
