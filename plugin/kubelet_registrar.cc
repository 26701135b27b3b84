#include "plugin/kubelet_registrar.h"

#include <sys/stat.h>

#include <algorithm>

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace kube_rdma {
RegistrationMode chooseRegistrationMode(const std::string& plugin_registry_dir) {
  struct stat st {};
  const bool exists = !plugin_registry_dir.empty() &&
                      ::stat(plugin_registry_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  return exists ? RegistrationMode::kPluginWatcher : RegistrationMode::kClassic;
}

std::string toString(RegistrationMode mode) {
  return mode == RegistrationMode::kPluginWatcher ? "plugin-watcher" : "classic";
}

std::string poolSocketName(const std::string& resource_name) {
  std::string name = resource_name;
  std::ranges::replace_if(
      name, [](char c) { return c == '/' || c == '.'; }, '_');
  return "kube-rdma-" + name + ".sock";
}

Status registerWithKubelet(const std::string& device_plugin_dir, const RegistrationRequest& request,
                           std::chrono::milliseconds timeout) {
  const std::string socket = device_plugin_dir + "/" + kKubeletSocketName;
  // A fresh channel each time: the kubelet's socket is a new inode after every restart.
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest message;
  message.set_version(kDevicePluginApiVersion);
  message.set_endpoint(request.endpoint);
  message.set_resource_name(request.resource_name);
  message.mutable_options()->set_get_preferred_allocation_available(
      request.preferred_allocation_available);
  grpc::ClientContext context;
  // Fail fast when the socket is not there yet: kubelet.sock's creation event retries at once,
  // whereas waiting for ready would sit in gRPC's reconnect backoff.
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1beta1::Empty reply;
  const grpc::Status status = stub->Register(&context, message, &reply);
  if (!status.ok()) {
    return makeError("kubelet at " + socket + " refused to register " + request.resource_name +
                     ": " + status.error_message());
  }
  return Ok{};
}

} // namespace kube_rdma
