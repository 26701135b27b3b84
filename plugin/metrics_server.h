#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/result.h"
#include "plugin/http_message.h"
#include "plugin/http_server.h"

namespace kube_rdma {

// Plain-HTTP GET /metrics and /healthz on --metrics-address, on the HttpServer's one thread.
class MetricsServer {
public:
  using RenderFn = std::function<std::string()>;
  using HealthFn = std::function<Result<std::string>()>; // Ok text, or why unhealthy

  /**
   * @param address "HOST:PORT" or ":PORT" (all addresses); port 0 picks a free one.
   * @param clock, logger must outlive the server.
   */
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, RenderFn render,
                                                      HealthFn health, const Clock& clock,
                                                      Logger& logger);

  int port() const { return server_->port(); }

private:
  explicit MetricsServer(HttpServerPtr server) : server_(std::move(server)) {}

  HttpServerPtr server_;
};
using MetricsServerPtr = std::unique_ptr<MetricsServer>;

// The answer for one GET: /metrics (Prometheus text 0.0.4), /healthz (200 or 503 with the
// reason), 404 for any other path.
HttpResponse metricsEndpoint(const HttpRequestHead& request, const MetricsServer::RenderFn& render,
                             const MetricsServer::HealthFn& health);

} // namespace kube_rdma
