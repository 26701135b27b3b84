#include "dra/dra_server.h"

#include <filesystem>

#include "dra/resource_slice.h"

namespace kube_rdma {

DraKubeletServer::DraKubeletServer(ClaimPreparer& preparer, DraHealthService& health,
                                   const std::string& dra_socket, Logger& logger)
    : v1_(preparer), v1beta1_(preparer), health_(health),
      // The kubelet takes the first DRAPlugin version it knows, so v1 goes first; it opens the
      // optional health stream only when the list names it.
      registration_(
          PluginWatcherInfo{"DRAPlugin",
                            kDraDriverName,
                            dra_socket,
                            {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth"}},
          "the DRA driver", logger) {}

Result<std::unique_ptr<DraKubeletServer>>
DraKubeletServer::start(const std::string& plugin_registry_dir, const std::string& plugin_dir,
                        ClaimPreparer& preparer, DraHealthService& health, Logger& logger) {
  for (const auto& dir : {plugin_registry_dir, plugin_dir}) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return makeError("cannot create " + dir + ": " + ec.message());
    }
  }
  const std::string dra_socket = plugin_dir + "/dra.sock";
  std::unique_ptr<DraKubeletServer> server(
      new DraKubeletServer(preparer, health, dra_socket, logger));
  auto dra =
      GrpcSocketServer::start(dra_socket, {&server->v1_, &server->v1beta1_, &server->health_});
  if (!dra.ok()) {
    return dra.error();
  }
  server->dra_server_ = std::move(*dra);
  auto registration = GrpcSocketServer::start(
      plugin_registry_dir + "/" + kDraDriverName + "-reg.sock", {&server->registration_});
  if (!registration.ok()) {
    return registration.error();
  }
  server->registration_server_ = std::move(*registration);
  return server;
}

} // namespace kube_rdma
