#include "dra/device_health.h"

#include <chrono>

#include "common/pools/pools.h"
#include "dra/resource_slice.h"

namespace kube_rdma {

namespace {
constexpr std::chrono::milliseconds kCancelledCheckInterval{200};
} // namespace

std::vector<DeviceHealthStatus> deviceHealth(const NodeTopology& topology,
                                             const PluginConfig& config) {
  const std::vector<NodePool> pools = buildPools(topology, config);
  std::vector<DeviceHealthStatus> out;
  for (const DraPort& p : publishedPorts(topology, pools)) {
    const std::optional<PortProblem> problem = portProblem(*p.device, *p.port);
    out.push_back({p.name, !problem, problem ? problem->message : ""});
  }
  return out;
}

void DraHealthService::update(std::vector<DeviceHealthStatus> devices) {
  {
    std::lock_guard lock(mutex_);
    if (devices == devices_) {
      return;
    }
    devices_ = std::move(devices);
    ++version_;
  }
  changed_.notify_all();
}

void DraHealthService::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  changed_.notify_all();
}

::v1::NodeWatchResourcesResponse DraHealthService::responseLocked() const {
  ::v1::NodeWatchResourcesResponse response;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch()).count();
  for (const auto& d : devices_) {
    auto* health = response.add_devices();
    health->mutable_device()->set_pool_name(pool_name_);
    health->mutable_device()->set_device_name(d.device);
    health->set_health(d.healthy ? ::v1::HEALTHY : ::v1::UNHEALTHY);
    health->set_last_updated_time(now);
    health->set_message(d.message);
  }
  return response;
}

grpc::Status
DraHealthService::NodeWatchResources(grpc::ServerContext* context,
                                     const ::v1::NodeWatchResourcesRequest*,
                                     grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) {
  std::unique_lock lock(mutex_);
  while (!stopped_) {
    const auto response = responseLocked();
    const uint64_t sent = version_;
    lock.unlock();
    if (!writer->Write(response)) {
      return grpc::Status::OK; // the kubelet went away
    }
    lock.lock();
    // A cancelled call wakes no condition variable: look again now and then.
    while (!context->IsCancelled() && !clock_.waitFor(lock, changed_, kCancelledCheckInterval, [&] {
      return stopped_ || version_ != sent;
    })) {
    }
    if (context->IsCancelled()) {
      return grpc::Status::CANCELLED;
    }
  }
  return grpc::Status::OK;
}

} // namespace kube_rdma
