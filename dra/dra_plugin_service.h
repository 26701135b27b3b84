#pragma once

#include <string>

#include "common/log.h"
#include "dra/claim_preparer.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

// The DRAPlugin services of rdma-dra-driver, v1 and v1beta1 (the same messages; the kubelet picks
// the first version of the registration's supported_versions it knows). Thin: each claim goes to
// ClaimPreparer and its outcome into that claim's entry of the answer, so one bad claim never
// fails the others.
namespace kube_rdma {

class DraPluginServiceV1 final : public k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin::Service {
public:
  explicit DraPluginServiceV1(ClaimPreparer& preparer) : preparer_(preparer) {}

  // dra::v1::DRAPlugin::Service
  grpc::Status NodePrepareResources(
      grpc::ServerContext* context,
      const k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest* request,
      k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext* context,
      const k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest* request,
      k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse* response) override;

private:
  ClaimPreparer& preparer_;
};

class DraPluginServiceV1beta1 final
    : public k8s::io::kubelet::pkg::apis::dra::v1beta1::DRAPlugin::Service {
public:
  explicit DraPluginServiceV1beta1(ClaimPreparer& preparer) : preparer_(preparer) {}

  // dra::v1beta1::DRAPlugin::Service
  grpc::Status NodePrepareResources(
      grpc::ServerContext* context,
      const k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesRequest* request,
      k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext* context,
      const k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesRequest* request,
      k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse* response) override;

private:
  ClaimPreparer& preparer_;
};

// The gRPC services the kubelet may use: "v1.DRAPlugin" first, then "v1beta1.DRAPlugin" (it
// takes the first it knows), and the optional health stream "v1.DRAResourceHealth", which the
// kubelet only opens when the list names it.
std::vector<std::string> draSupportedVersions();

} // namespace kube_rdma
