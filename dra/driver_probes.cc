#include "dra/driver_probes.h"

#include "common/util/command_line.h"

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
  if (!inputs.registration.notified && now - inputs.started > timeout) {
    return makeError("the kubelet has not registered the driver within " + formatDuration(timeout));
  }
  return std::string("ok\n");
}

Result<std::string> judgeDriverReadiness(const PublishingState& publishing,
                                         std::chrono::steady_clock::time_point now) {
  const InformerStatus& watch = publishing.watch;
  if (!watch.connected && watch.disconnected_since) {
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(now - *watch.disconnected_since);
    return makeError("the API server has not answered for " +
                     formatDuration(std::chrono::milliseconds(seconds)) + ": " + watch.last_error);
  }
  if (!publishing.last_error.empty()) {
    return makeError("publishing the ResourceSlices failed: " + publishing.last_error);
  }
  if (!watch.synced || !publishing.last_success) {
    return makeError("the node's ResourceSlices have not been read yet");
  }
  return std::string("ok\n");
}

} // namespace kube_rdma
