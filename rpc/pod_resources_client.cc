#include "rpc/pod_resources_client.h"

#include <grpcpp/grpcpp.h>

#include "podresources/v1/api.grpc.pb.h"

namespace kube_rdma {

Result<std::vector<ContainerHoldings>> listPodResources(const std::string& socket,
                                                        std::chrono::milliseconds deadline) {
  auto channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
  auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::ListPodResourcesResponse response;
  const grpc::Status status = stub->List(&context, v1::ListPodResourcesRequest(), &response);
  if (!status.ok()) {
    return makeError("PodResources List on " + socket + ": " + status.error_message());
  }
  std::vector<ContainerHoldings> held;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& container : pod.containers()) {
      ContainerHoldings holdings{pod.namespace_(), pod.name(), container.name(), {}, {}};
      for (const auto& devices : container.devices()) {
        auto& ids = holdings.device_ids[devices.resource_name()];
        ids.insert(ids.end(), devices.device_ids().begin(), devices.device_ids().end());
      }
      for (const auto& claim : container.dynamic_resources()) {
        for (const auto& device : claim.claim_resources()) {
          holdings.claim_devices.push_back({claim.claim_namespace(), claim.claim_name(),
                                            device.driver_name(), device.pool_name(),
                                            device.device_name()});
        }
      }
      if (!holdings.device_ids.empty() || !holdings.claim_devices.empty()) {
        held.push_back(std::move(holdings));
      }
    }
  }
  return held;
}

std::optional<std::vector<ContainerHoldings>> PodResourcesReader::read() {
  if (socket_.empty()) {
    return std::nullopt;
  }
  auto held = listPodResources(socket_, std::chrono::seconds(2));
  std::lock_guard<std::mutex> lock(mutex_);
  if (held) {
    last_error_.clear();
    return std::move(*held);
  }
  on_error_();
  if (held.error().message != last_error_) {
    logger_.warn("cannot read the kubelet's PodResources: /metrics has no kube_rdma_pod_port_info",
                 {{"error", held.error().message}});
    last_error_ = held.error().message;
  }
  return std::nullopt;
}

ScrapedFamily podPortInfoFamily() {
  return {"kube_rdma_pod_port_info",
          "RDMA ports a running container holds (1), from the kubelet's PodResources API; join on "
          "device and port with the port counters",
          MetricType::kGauge,
          {}};
}

Labels podPortLabels(const ContainerHoldings& container,
                     const std::pair<std::string, std::string>& held_as, const HcaPort& port) {
  return {{"namespace", container.pod_namespace},
          {"pod", container.pod},
          {"container", container.container},
          held_as,
          {"device", port.device},
          {"port", std::to_string(port.port)}};
}

} // namespace kube_rdma
