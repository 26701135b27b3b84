#include "dra/driver_liveness.h"

#include "common/command_line.h"

namespace kube_rdma {

Result<std::string> judgeDriverLiveness(const DriverLivenessInputs& inputs,
                                        std::chrono::steady_clock::time_point now,
                                        std::chrono::milliseconds timeout) {
  if (!inputs.dra_socket_present) {
    return makeError("the DRA socket is gone: the kubelet cannot call the driver");
  }
  if (!inputs.registration_socket_present) {
    return makeError("the registration socket is gone: the kubelet cannot find the driver");
  }
  if (inputs.registration.notified && !inputs.registration.registered) {
    return makeError("the kubelet refused the registration: " + inputs.registration.error);
  }
  const std::string limit = formatDuration(timeout);
  if (!inputs.registration.notified && now - inputs.started > timeout) {
    return makeError("the kubelet has not registered the driver within " + limit);
  }
  const auto since = inputs.publishing.last_success.value_or(inputs.started);
  if (now - since > timeout) {
    return makeError("no ResourceSlice round has succeeded for " + limit + ": " +
                     (inputs.publishing.last_error.empty() ? std::string("none finished")
                                                           : inputs.publishing.last_error));
  }
  return std::string("ok\n");
}

} // namespace kube_rdma
