#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "common/util/log.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace kube_rdma {

// What a kubelet plugin tells the plugin watcher in GetInfo.
struct PluginWatcherInfo {
  std::string type;     // "DevicePlugin" or "DRAPlugin"
  std::string name;     // the resource name or the DRA driver's name
  std::string endpoint; // the path of the socket serving the plugin's own service
  std::vector<std::string> supported_versions; // the kubelet takes the first one it knows
};

// What the kubelet said last in NotifyRegistrationStatus.
struct RegistrationOutcome {
  bool notified = false; // false until the kubelet calls
  bool registered = false;
  std::string error; // the kubelet's reason when it refused
};

// The plugin watcher's Registration service, served on a socket in the kubelet's
// plugins_registry directory: the kubelet finds the socket by inotify, calls GetInfo, then
// NotifyRegistrationStatus, which is logged as "kubelet registered <what>" or "kubelet refused
// <what>".
class PluginWatcherRegistration final : public pluginregistration::Registration::Service {
public:
  PluginWatcherRegistration(PluginWatcherInfo info, std::string what, Logger& logger)
      : info_(std::move(info)), what_(std::move(what)), logger_(logger) {}

  // pluginregistration::Registration::Service
  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest* request,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status
  NotifyRegistrationStatus(grpc::ServerContext* context,
                           const pluginregistration::RegistrationStatus* request,
                           pluginregistration::RegistrationStatusResponse* response) override;

  RegistrationOutcome outcome() const;

private:
  const PluginWatcherInfo info_;
  const std::string what_;
  Logger& logger_;
  mutable std::mutex mutex_;
  RegistrationOutcome outcome_;
};

} // namespace kube_rdma
