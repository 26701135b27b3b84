#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/util/log.h"
#include "common/util/result.h"

namespace kube_rdma {

// Plain-HTTP GET /metrics (Prometheus text 0.0.4), /healthz and, when given, /readyz (200, or
// 503 with the reason) on --metrics-address, served by cpp-httplib on a small thread pool of
// its own. Not by https_server.h: that one speaks TLS only (every connection a handshake with the
// serving certificate) and is built for the API server's many concurrent connections; a scrape
// and a probe every few seconds over plain HTTP need neither.
class MetricsServer {
public:
  using RenderFn = std::function<std::string()>;
  using HealthFn = std::function<Result<std::string>()>; // Ok text, or why unhealthy

  // `address`: "HOST:PORT" or ":PORT" (all addresses); port 0 picks a free one.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, RenderFn render,
                                                      HealthFn health, HealthFn ready = nullptr);
  // As start(), for a daemon on the host network whose devices must not wait on its metrics: a
  // port another program holds (dcgm-exporter's 9400 was ours once) is logged as an error that
  // says what to do, tried again every `retry` and served from when it is free; where it serves
  // is logged either way.
  // Any other error, a malformed address or one the node does not have, fails as start's.
  static Result<std::unique_ptr<MetricsServer>>
  startWhenPortIsFree(const std::string& address, Logger& logger, std::chrono::milliseconds retry,
                      RenderFn render, HealthFn health, HealthFn ready = nullptr);
  // Stops listening (or waiting for the port) and joins the server's threads.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // 0 while the port is held by another program.
  int port() const;

private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  // start() when `wait_logger` is null, startWhenPortIsFree() otherwise.
  static Result<std::unique_ptr<MetricsServer>>
  open(const std::string& address, Logger* wait_logger, std::chrono::milliseconds retry,
       RenderFn render, HealthFn health, HealthFn ready);

  std::unique_ptr<Impl> impl_; // keeps <httplib.h> out of the daemons' other files
};
using MetricsServerPtr = std::unique_ptr<MetricsServer>;

// How often the daemons try a metrics port another program holds again.
inline constexpr std::chrono::milliseconds kMetricsPortRetry{10'000};

} // namespace kube_rdma
