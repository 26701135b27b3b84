#pragma once

#include <chrono>
#include <string>

#include "common/util/result.h"

namespace kube_rdma {

inline constexpr const char* kDevicePluginApiVersion = "v1beta1";
inline constexpr const char* kKubeletSocketName = "kubelet.sock";

// How the kubelet learns about our pools. Plugin-watcher mode is used when the kubelet's
// plugins_registry directory exists at start (it watches it and dials our socket there);
// otherwise the classic mode: our sockets in the device-plugins directory and a Register call
// on kubelet.sock.
enum class RegistrationMode { kClassic, kPluginWatcher };

RegistrationMode chooseRegistrationMode(const std::string& plugin_registry_dir);
std::string toString(RegistrationMode mode);

// The socket file name of a pool, e.g. "kube-rdma-rdma_shared.sock" for "rdma/shared".
std::string poolSocketName(const std::string& resource_name);

struct RegistrationRequest {
  std::string resource_name;
  std::string endpoint; // the socket's file name inside the device-plugins directory
  bool preferred_allocation_available = false;
};

// Classic registration: a Register RPC on <device_plugin_dir>/kubelet.sock, given up after
// `timeout`. Ok once the kubelet accepted, else the kubelet's (or the dial's) error.
Status registerWithKubelet(const std::string& device_plugin_dir, const RegistrationRequest& request,
                           std::chrono::milliseconds timeout);

} // namespace kube_rdma
