#pragma once

#include <fstream>
#include <memory>
#include <string>

#include "common/util/clock.h"
#include "kubeclient/api_client.h"
#include "test/apiserver/api_server_simulator.h"
#include "test/plugin/temp_dir.h"
#include "test/webhook/test_certificates.h"

namespace kube_rdma {

inline constexpr const char* kSimulatedApiToken = "simulated-api-token";

// The API-server simulator over real TLS with a token for one user (by default the DRA driver's
// service account), and a client of it.
class SimulatedApi {
public:
  // Empty when it runs; else what failed.
  std::string start(const std::string& user = "system:serviceaccount:kube-rdma:rdma-dra-driver",
                    const ClientOptions& options = {},
                    ClockPtr clock = std::make_shared<RealClock>()) {
    if (std::string failed = makeTestCertificates(dir_.path(), {"apiserver"}); !failed.empty()) {
      return failed;
    }
    simulator_ = std::make_unique<ApiServerSimulator>(SimulatorTls{
        dir_.path() + "/apiserver.crt", dir_.path() + "/apiserver.key", dir_.path() + "/ca.crt"});
    if (Status started = simulator_->start(); !started.ok()) {
      return started.error().message;
    }
    simulator_->addToken(kSimulatedApiToken, user);
    Result<ApiClientPtr> api = ApiClient::fromConfig(config(), options, std::move(clock));
    if (!api.ok()) {
      return api.error().message;
    }
    api_ = std::move(*api);
    return "";
  }

  ApiConfig config() const {
    ApiConfig config;
    config.server = simulator_->url();
    config.ca_pem = *readWholeFile(dir_.path() + "/ca.crt");
    config.token = kSimulatedApiToken;
    return config;
  }

  // A kubeconfig file for the simulator, for the driver's --kubeconfig.
  std::string writeKubeconfig() const {
    const std::string path = dir_.path() + "/kubeconfig";
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: sim\n"
                        << "clusters:\n- name: sim\n  cluster:\n    server: " << simulator_->url()
                        << "\n    certificate-authority: " << dir_.path() << "/ca.crt\n"
                        << "users:\n- name: driver\n  user:\n    token: " << kSimulatedApiToken
                        << "\n"
                        << "contexts:\n- name: sim\n  context:\n    cluster: sim\n"
                        << "    user: driver\n";
    return path;
  }

  ApiServerSimulator& simulator() { return *simulator_; }
  ApiClient& api() { return *api_; }

private:
  TempDir dir_;
  std::unique_ptr<ApiServerSimulator> simulator_;
  ApiClientPtr api_;
};

} // namespace kube_rdma
