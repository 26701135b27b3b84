#include "rpc/plugin_watcher_registration.h"

namespace kube_rdma {

grpc::Status PluginWatcherRegistration::GetInfo(grpc::ServerContext*,
                                                const pluginregistration::InfoRequest*,
                                                pluginregistration::PluginInfo* response) {
  response->set_type(info_.type);
  response->set_name(info_.name);
  response->set_endpoint(info_.endpoint);
  response->mutable_supported_versions()->Add(info_.supported_versions.begin(),
                                              info_.supported_versions.end());
  return grpc::Status::OK;
}

grpc::Status PluginWatcherRegistration::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse*) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    outcome_ = RegistrationOutcome{true, request->plugin_registered(), request->error()};
  }
  if (request->plugin_registered()) {
    logger_.info("kubelet registered " + what_, {{"name", info_.name}, {"type", info_.type}});
  } else {
    logger_.error("kubelet refused " + what_,
                  {{"name", info_.name}, {"type", info_.type}, {"error", request->error()}});
  }
  return grpc::Status::OK;
}

RegistrationOutcome PluginWatcherRegistration::outcome() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return outcome_;
}

} // namespace kube_rdma
