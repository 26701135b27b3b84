#include "dra/dra_plugin_service.h"

namespace kube_rdma {
namespace {

// The v1 and v1beta1 messages have the same fields but v1's share_id; these serve both.
template <class Request, class Response>
void prepareEach(ClaimPreparer& preparer, const Request& request, Response& response) {
  for (const auto& claim : request.claims()) {
    auto& answer = (*response.mutable_claims())[claim.uid()];
    auto devices = preparer.prepare(ClaimRef{claim.namespace_(), claim.name(), claim.uid()});
    if (!devices.ok()) {
      answer.set_error(devices.error().message);
      continue;
    }
    for (const auto& device : *devices) {
      auto* out = answer.add_devices();
      for (const auto& name : device.request_names) {
        out->add_request_names(name);
      }
      out->set_pool_name(device.pool_name);
      out->set_device_name(device.device_name);
      for (const auto& id : device.cdi_device_ids) {
        out->add_cdi_device_ids(id);
      }
      if constexpr (requires { out->set_share_id(device.share_id); }) {
        if (!device.share_id.empty()) {
          out->set_share_id(device.share_id);
        }
      }
    }
  }
}

template <class Request, class Response>
void unprepareEach(ClaimPreparer& preparer, const Request& request, Response& response) {
  for (const auto& claim : request.claims()) {
    auto& answer = (*response.mutable_claims())[claim.uid()];
    if (auto status = preparer.unprepare(ClaimRef{claim.namespace_(), claim.name(), claim.uid()});
        !status.ok()) {
      answer.set_error(status.error().message);
    }
  }
}

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

} // namespace

grpc::Status
DraPluginServiceV1::NodePrepareResources(grpc::ServerContext*,
                                         const v1::NodePrepareResourcesRequest* request,
                                         v1::NodePrepareResourcesResponse* response) {
  prepareEach(preparer_, *request, *response);
  return grpc::Status::OK;
}

grpc::Status
DraPluginServiceV1::NodeUnprepareResources(grpc::ServerContext*,
                                           const v1::NodeUnprepareResourcesRequest* request,
                                           v1::NodeUnprepareResourcesResponse* response) {
  unprepareEach(preparer_, *request, *response);
  return grpc::Status::OK;
}

grpc::Status
DraPluginServiceV1beta1::NodePrepareResources(grpc::ServerContext*,
                                              const v1beta1::NodePrepareResourcesRequest* request,
                                              v1beta1::NodePrepareResourcesResponse* response) {
  prepareEach(preparer_, *request, *response);
  return grpc::Status::OK;
}

grpc::Status DraPluginServiceV1beta1::NodeUnprepareResources(
    grpc::ServerContext*, const v1beta1::NodeUnprepareResourcesRequest* request,
    v1beta1::NodeUnprepareResourcesResponse* response) {
  unprepareEach(preparer_, *request, *response);
  return grpc::Status::OK;
}

std::vector<std::string> draSupportedVersions() {
  return {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth"};
}

} // namespace kube_rdma
