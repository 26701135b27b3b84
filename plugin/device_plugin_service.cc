#include "plugin/device_plugin_service.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/util/strings.h"
#include "plugin/plugin_metrics.h"

namespace kube_rdma {
namespace {

std::vector<std::string> toVector(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

v1beta1::ListAndWatchResponse toListAndWatchResponse(const DeviceList& list) {
  v1beta1::ListAndWatchResponse response;
  for (const auto& device : list.devices) {
    auto* out = response.add_devices();
    out->set_id(device.id);
    out->set_health(device.healthy ? kHealthy : kUnhealthy);
    if (device.numa_node) {
      out->mutable_topology()->add_nodes()->set_id(*device.numa_node);
    }
  }
  return response;
}

void toContainerAllocateResponse(const ContainerAllocation& allocation,
                                 v1beta1::ContainerAllocateResponse& out) {
  for (const auto& device : allocation.devices) {
    auto* spec = out.add_devices();
    spec->set_container_path(device.container_path);
    spec->set_host_path(device.host_path);
    spec->set_permissions(device.permissions);
  }
  for (const auto& [name, value] : allocation.envs) {
    (*out.mutable_envs())[name] = value;
  }
  for (const auto& mount : allocation.mounts) {
    auto* m = out.add_mounts();
    m->set_container_path(mount.container_path);
    m->set_host_path(mount.host_path);
    m->set_read_only(mount.read_only);
  }
  for (const auto& name : allocation.cdi_devices) {
    out.add_cdi_devices()->set_name(name);
  }
}

} // namespace

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(false);
  response->set_get_preferred_allocation_available(manager_.preferredAllocationAvailable());
  return grpc::Status::OK;
}

grpc::Status
DevicePluginService::ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                                  grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  logger_.info("ListAndWatch stream opened", {{"resource", resource_}});
  DeviceList list = manager_.devices();
  // Every message is the full list; a re-send after the resend interval repairs a lost update.
  while (!list.closed && !stop_.stop_requested() && !context->IsCancelled()) {
    if (!writer->Write(toListAndWatchResponse(list))) {
      logger_.warn("ListAndWatch stream closed by the kubelet", {{"resource", resource_}});
      return grpc::Status::OK;
    }
    metrics_.counter(plugin_metrics::kListAndWatchSends, {{"resource", resource_}}).inc();
    list = manager_.waitForChange(list.version, std::chrono::milliseconds(resend_interval_ms_),
                                  stop_.get_token());
  }
  logger_.info("ListAndWatch stream ended", {{"resource", resource_}});
  return grpc::Status::OK;
}

grpc::Status
DevicePluginService::GetPreferredAllocation(grpc::ServerContext*,
                                            const v1beta1::PreferredAllocationRequest* request,
                                            v1beta1::PreferredAllocationResponse* response) {
  for (const auto& container : request->container_requests()) {
    auto chosen = manager_.preferredAllocation(toVector(container.available_deviceids()),
                                               toVector(container.must_include_deviceids()),
                                               container.allocation_size());
    if (!chosen) {
      return {grpc::StatusCode::INVALID_ARGUMENT, chosen.error().message};
    }
    auto* out = response->add_container_responses();
    for (const auto& id : *chosen) {
      out->add_deviceids(id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  for (const auto& container : request->container_requests()) {
    const auto ids = toVector(container.devices_ids());
    auto allocation = manager_.allocate(ids);
    if (!allocation) {
      refused_.inc();
      logger_.warn("Allocate refused", {{"resource", resource_},
                                        {"ids", joinStrings(ids, ", ")},
                                        {"error", allocation.error().message}});
      return {grpc::StatusCode::INVALID_ARGUMENT, allocation.error().message};
    }
    toContainerAllocateResponse(*allocation, *response->add_container_responses());
    granted_.inc();
    logger_.info("Allocate granted", {{"resource", resource_}, {"ids", joinStrings(ids, ", ")}});
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK; // pre_start_required is false: the kubelet never calls this
}

} // namespace kube_rdma
