#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/util/clock.h"
#include "common/node/device_model.h"
#include "common/pools/plugin_config.h"
#include "dra-health/v1/api.grpc.pb.h"

namespace kube_rdma {

// The health of one published DRA device.
struct DeviceHealthStatus {
  std::string device; // the DRA device name
  bool healthy = false;
  std::string message; // why not, for the pod status
  bool operator==(const DeviceHealthStatus&) const = default;
};

// Every published port: healthy unless portProblem() names one, in publication order.
std::vector<DeviceHealthStatus> deviceHealth(const NodeTopology& topology,
                                             const PluginConfig& config);

// The kubelet's DRA resource-health stream (dra-health v1, NodeWatchResources): each stream gets
// the complete list at once and again whenever update() changes it, until stop() or the kubelet
// goes away.
class DraHealthService final : public ::v1::DRAResourceHealth::Service {
public:
  /** @param clock not owned; stamps last_updated_time, and streams wait through it. */
  DraHealthService(std::string pool_name, const Clock& clock)
      : pool_name_(std::move(pool_name)), clock_(clock) {}

  void update(std::vector<DeviceHealthStatus> devices);
  // Ends every stream; call before the server shuts down.
  void stop();

  // v1::DRAResourceHealth::Service
  grpc::Status
  NodeWatchResources(grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest* request,
                     grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) override;

private:
  ::v1::NodeWatchResourcesResponse responseLocked() const;

  const std::string pool_name_;
  const Clock& clock_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<DeviceHealthStatus> devices_;
  uint64_t version_ = 0;
  bool stopped_ = false;
};

} // namespace kube_rdma
