#pragma once

#include <chrono>
#include <string>

#include "common/util/result.h"
#include "dra/slice_publisher.h"
#include "rpc/plugin_watcher_registration.h"

// What rdma-dra-driver's /healthz and /readyz answer (docs/dra.md "Metrics and health").
namespace kube_rdma {

// What /healthz judges, read from the running parts.
struct DriverLivenessInputs {
  bool dra_socket_present = false;
  bool registration_socket_present = false;
  RegistrationOutcome registration;
  std::chrono::steady_clock::time_point started;
};

// "ok" unless a restart would fix something: a kubelet socket gone, the kubelet refused the
// registration, or no registration for longer than `timeout`. The API server is not judged
// here: a brownout of it must not restart every driver of the cluster at once.
Result<std::string> judgeDriverLiveness(const DriverLivenessInputs& inputs,
                                        std::chrono::steady_clock::time_point now,
                                        std::chrono::milliseconds timeout);

// "ok" while the node's slices are known to be right: the watch of them is synced and connected
// and the last write succeeded. Otherwise why not, with the API server's last error.
Result<std::string> judgeDriverReadiness(const PublishingState& publishing,
                                         std::chrono::steady_clock::time_point now);

} // namespace kube_rdma
