#pragma once

#include <functional>
#include <string>

// Something a user should see on a pod, as a Warning Event (kubeclient/pod_events.h): the node
// daemons find it (nri/), and post it where they have API credentials.
namespace kube_rdma {

struct PodWarning {
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  std::string reason;  // CamelCase, as Kubernetes' own: RdmaGidPortsDisagree
  std::string message; // what happened, to which container, and what to do
};

using PodWarningSink = std::function<void(const PodWarning&)>;

} // namespace kube_rdma
