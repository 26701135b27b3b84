#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"

namespace httplib {
class Server;
}

namespace kube_rdma {

// Plain-HTTP /metrics and /healthz on --metrics-address, on its own thread.
class MetricsServer {
public:
  using RenderFn = std::function<std::string()>;
  using HealthFn = std::function<Result<std::string>()>; // Ok text, or why unhealthy

  /** @param address "HOST:PORT" or ":PORT" (all addresses); port 0 picks a free one. */
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, RenderFn render,
                                                      HealthFn health);
  ~MetricsServer();

  int port() const { return port_; }

private:
  MetricsServer(std::unique_ptr<httplib::Server> server, int port);

  std::unique_ptr<httplib::Server> server_;
  int port_;
  std::thread thread_;
};
using MetricsServerPtr = std::unique_ptr<MetricsServer>;

} // namespace kube_rdma
