#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/result.h"

namespace kube_rdma {

// Plain-HTTP GET /metrics (Prometheus text 0.0.4), /healthz and, when given, /readyz (200, or
// 503 with the reason) on --metrics-address, served by cpp-httplib on a small thread pool of
// its own.
class MetricsServer {
public:
  using RenderFn = std::function<std::string()>;
  using HealthFn = std::function<Result<std::string>()>; // Ok text, or why unhealthy

  // `address`: "HOST:PORT" or ":PORT" (all addresses); port 0 picks a free one.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, RenderFn render,
                                                      HealthFn health, HealthFn ready = nullptr);
  // Stops listening and joins the server's threads.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const;

private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_; // keeps <httplib.h> out of the daemons' other files
};
using MetricsServerPtr = std::unique_ptr<MetricsServer>;

} // namespace kube_rdma
