#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "dra/slice_publisher.h"
#include "rpc/plugin_watcher_registration.h"

namespace kube_rdma {

// What /healthz of rdma-dra-driver judges, read from the running parts.
struct DriverLivenessInputs {
  bool dra_socket_present = false;
  bool registration_socket_present = false;
  RegistrationOutcome registration;
  PublishingState publishing;
  std::chrono::steady_clock::time_point started;
};

// "ok" while the driver can do its job; otherwise the first reason it cannot, as /healthz says
// it (docs/dra.md "Metrics and health"): a kubelet socket gone, the kubelet refused the
// registration, or for longer than `timeout` no registration or no successful slice round.
Result<std::string> judgeDriverLiveness(const DriverLivenessInputs& inputs,
                                        std::chrono::steady_clock::time_point now,
                                        std::chrono::milliseconds timeout);

} // namespace kube_rdma
