#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

// What the benchmarks share (plugin_bench, dra_bench): percentiles of samples, and the call of
// plugin_bench's trivial gRPC echo server (plugin_bench --echo-server SOCKET), the reference
// round trip over a unix socket.
namespace kube_rdma::bench {

using Clock = std::chrono::steady_clock;

inline double micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Stats {
  double p50, p99, max;
};
inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  return {at(0.5), at(0.99), v.back()};
}

// One Allocate call for one container holding device id, as the kubelet makes it (no deadline):
// its round trip in microseconds, or nothing when the call failed.
inline std::optional<double> timedAllocate(v1beta1::DevicePlugin::Stub& stub,
                                           const std::string& id) {
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids(id);
  v1beta1::AllocateResponse response;
  grpc::ClientContext context;
  const auto t0 = Clock::now();
  if (!stub.Allocate(&context, request, &response).ok()) {
    return std::nullopt;
  }
  return micros(Clock::now() - t0);
}

} // namespace kube_rdma::bench
