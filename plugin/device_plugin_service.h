#pragma once

#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>

#include "common/util/log.h"
#include "common/util/metrics.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "plugin/plugin_metrics.h"
#include "plugin/resource_manager.h"

namespace kube_rdma {

// The kubelet-facing gRPC service of one pool: a thin translation over a ResourceManager.
class DevicePluginService final : public v1beta1::DevicePlugin::Service {
public:
  DevicePluginService(ResourceManager& manager, std::chrono::milliseconds resend_interval,
                      Logger& logger, MetricsRegistry& metrics)
      : manager_(manager), resource_(manager.resourceName()),
        resend_interval_ms_(resend_interval.count()), logger_(logger), metrics_(metrics),
        // Both series exist from the start: increase() and alerts see a first refusal.
        granted_(metrics.counter(plugin_metrics::kAllocations,
                                 {{"resource", resource_}, {"outcome", "granted"}})),
        refused_(metrics.counter(plugin_metrics::kAllocations,
                                 {{"resource", resource_}, {"outcome", "refused"}})) {}

  // Ends every ListAndWatch stream of this service, so that the server can shut down at once.
  void stop() { stop_.request_stop(); }
  // Takes effect at each stream's next wait. @return whether the interval changed.
  bool setResendInterval(std::chrono::milliseconds interval) {
    return resend_interval_ms_.exchange(interval.count()) != interval.count();
  }

  // v1beta1::DevicePlugin::Service
  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

private:
  ResourceManager& manager_;
  const std::string resource_;
  std::atomic<std::chrono::milliseconds::rep> resend_interval_ms_; // a config reload changes it
  Logger& logger_;
  MetricsRegistry& metrics_;
  Counter& granted_;
  Counter& refused_;
  std::stop_source stop_;
};

} // namespace kube_rdma
