#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/util/result.h"
#include "nri/ttrpc_frames.h"
#include "nri/v1alpha1/api.pb.h"

// One connection of an NRI plugin to the runtime (containerd, CRI-O), without the socket: the
// plugin registers on the runtime's service, the runtime configures it (the plugin answers with
// the events it wants: CreateContainer only), synchronizes it with the pods that already run, and
// then calls CreateContainer for each container it creates, after the pod's sandbox and network
// exist and before the container does (docs/nri.md).
namespace kube_rdma {

namespace nriapi = nri::pkg::api::v1alpha1;

// The adjustment for one container. It must not fail: the runtime fails a container whose plugin
// answers CreateContainer with an error, so trouble is an empty adjustment (and a log line).
using CreateContainerHandler =
    std::function<nriapi::ContainerAdjustment(const nriapi::CreateContainerRequest&)>;
// Called with each pod the runtime names: those of Synchronize, and the pod of each container.
using PodSeenHandler = std::function<void(const nriapi::PodSandbox&)>;

class NriSession {
public:
  NriSession(std::string plugin_name, std::string plugin_index, CreateContainerHandler handler,
             PodSeenHandler on_pod = nullptr);

  // The first bytes to write: RegisterPlugin on the runtime's service.
  std::string registration() const;

  // Bytes read from the socket in; the answers to write out. An error ends the connection: bad
  // framing, a call the protocol does not allow, the runtime refusing the registration.
  Result<std::string> receive(std::string_view bytes);

  // The runtime has accepted the registration and configured the plugin.
  bool configured() const { return !runtime_.empty(); }
  // "containerd v2.4.2", from Configure.
  const std::string& runtime() const { return runtime_; }

private:
  Result<std::string> answerRuntimeCall(const TtrpcMessage& message);
  Status readRegistrationAnswer(const TtrpcMessage& message) const;

  std::string plugin_name_;
  std::string plugin_index_;
  CreateContainerHandler handler_;
  PodSeenHandler on_pod_;
  TtrpcFrameDecoder decoder_;
  std::string runtime_;
};

} // namespace kube_rdma
