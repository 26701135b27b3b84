#pragma once

#include <memory>
#include <string>

#include "common/util/log.h"
#include "common/util/result.h"
#include "dra/claim_preparer.h"
#include "dra/device_health.h"
#include "dra/dra_plugin_service.h"
#include "rpc/grpc_socket_server.h"
#include "rpc/plugin_watcher_registration.h"

namespace kube_rdma {

// The driver's two kubelet sockets: "<plugin_dir>/dra.sock" serving DRAPlugin v1 and v1beta1
// and the DRAResourceHealth stream, and "<plugin_registry_dir>/rdma.kube-rdma.io-reg.sock" serving
// the plugin watcher's Registration, created in that order (the kubelet dials the endpoint as soon
// as it sees the registration socket). Stopping removes both.
class DraKubeletServer {
public:
  /** @param preparer, health, logger not owned; must outlive the server. */
  static Result<std::unique_ptr<DraKubeletServer>> start(const std::string& plugin_registry_dir,
                                                         const std::string& plugin_dir,
                                                         ClaimPreparer& preparer,
                                                         DraHealthService& health, Logger& logger);
  // Ends the health streams first: the server's shutdown waits for running calls.
  ~DraKubeletServer() { health_.stop(); }

  const std::string& draSocket() const { return dra_server_->socketPath(); }
  const std::string& registrationSocket() const { return registration_server_->socketPath(); }
  // Whether each socket file is still ours (the kubelet's directories may have been wiped).
  bool draSocketPresent() const { return dra_server_->socketPresent(); }
  bool registrationSocketPresent() const { return registration_server_->socketPresent(); }
  RegistrationOutcome registration() const { return registration_.outcome(); }

private:
  DraKubeletServer(ClaimPreparer& preparer, DraHealthService& health, const std::string& dra_socket,
                   Logger& logger);

  DraPluginServiceV1 v1_;
  DraPluginServiceV1beta1 v1beta1_;
  DraHealthService& health_;
  PluginWatcherRegistration registration_;
  // Declared after the services: servers stop before the services they call go away.
  GrpcSocketServerPtr dra_server_;
  GrpcSocketServerPtr registration_server_;
};
using DraKubeletServerPtr = std::unique_ptr<DraKubeletServer>;

} // namespace kube_rdma
