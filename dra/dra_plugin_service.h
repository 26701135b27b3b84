#pragma once

#include <string>
#include <vector>

#include "dra/claim_preparer.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

// The DRAPlugin services of rdma-dra-driver, v1 and v1beta1 (the same messages but v1's share_id;
// the kubelet picks the first version of the registration's supported_versions it knows). Thin:
// each claim goes to ClaimPreparer and its outcome into that claim's entry of the answer, so one
// bad claim never fails the others.
namespace kube_rdma {

namespace dra_service {

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

} // namespace dra_service

template <class Service, class PrepareRequest, class PrepareResponse, class UnprepareRequest,
          class UnprepareResponse>
class DraPluginService final : public Service {
public:
  explicit DraPluginService(ClaimPreparer& preparer) : preparer_(preparer) {}

  // DRAPlugin::Service
  grpc::Status NodePrepareResources(grpc::ServerContext*, const PrepareRequest* request,
                                    PrepareResponse* response) override {
    dra_service::prepareEach(preparer_, *request, *response);
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const UnprepareRequest* request,
                                      UnprepareResponse* response) override {
    dra_service::unprepareEach(preparer_, *request, *response);
    return grpc::Status::OK;
  }

private:
  ClaimPreparer& preparer_;
};

namespace dra_v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace dra_v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using DraPluginServiceV1 =
    DraPluginService<dra_v1::DRAPlugin::Service, dra_v1::NodePrepareResourcesRequest,
                     dra_v1::NodePrepareResourcesResponse, dra_v1::NodeUnprepareResourcesRequest,
                     dra_v1::NodeUnprepareResourcesResponse>;
using DraPluginServiceV1beta1 =
    DraPluginService<dra_v1beta1::DRAPlugin::Service, dra_v1beta1::NodePrepareResourcesRequest,
                     dra_v1beta1::NodePrepareResourcesResponse,
                     dra_v1beta1::NodeUnprepareResourcesRequest,
                     dra_v1beta1::NodeUnprepareResourcesResponse>;

// The gRPC services the kubelet may use: "v1.DRAPlugin" first, then "v1beta1.DRAPlugin" (it
// takes the first it knows), and the optional health stream "v1.DRAResourceHealth", which the
// kubelet only opens when the list names it.
std::vector<std::string> draSupportedVersions();

} // namespace kube_rdma
