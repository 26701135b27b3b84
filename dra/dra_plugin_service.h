#pragma once

#include "dra/claim_preparer.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

// The DRAPlugin services of rdma-dra-driver, v1 and v1beta1 (the same messages but v1's share_id;
// the kubelet picks the first version of the registration's supported_versions it knows). Thin:
// each claim goes to ClaimPreparer and its outcome into that claim's entry of the answer, so one
// bad claim never fails the others.
namespace kube_rdma {

template <class Service, class PrepareRequest, class PrepareResponse, class UnprepareRequest,
          class UnprepareResponse>
class DraPluginService final : public Service {
public:
  explicit DraPluginService(ClaimPreparer& preparer) : preparer_(preparer) {}

  // DRAPlugin::Service
  grpc::Status NodePrepareResources(grpc::ServerContext*, const PrepareRequest* request,
                                    PrepareResponse* response) override {
    for (const auto& claim : request->claims()) {
      auto& answer = (*response->mutable_claims())[claim.uid()];
      auto devices = preparer_.prepare(ClaimRef{claim.namespace_(), claim.name(), claim.uid()});
      if (!devices.ok()) {
        answer.set_error(devices.error().message);
        continue;
      }
      for (const auto& device : *devices) {
        auto* out = answer.add_devices();
        out->mutable_request_names()->Add(device.request_names.begin(), device.request_names.end());
        out->set_pool_name(device.pool_name);
        out->set_device_name(device.device_name);
        out->mutable_cdi_device_ids()->Add(device.cdi_device_ids.begin(),
                                           device.cdi_device_ids.end());
        if constexpr (requires { out->set_share_id(device.share_id); }) {
          if (!device.share_id.empty()) {
            out->set_share_id(device.share_id);
          }
        }
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const UnprepareRequest* request,
                                      UnprepareResponse* response) override {
    for (const auto& claim : request->claims()) {
      auto& answer = (*response->mutable_claims())[claim.uid()];
      if (auto status =
              preparer_.unprepare(ClaimRef{claim.namespace_(), claim.name(), claim.uid()});
          !status.ok()) {
        answer.set_error(status.error().message);
      }
    }
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

} // namespace kube_rdma
