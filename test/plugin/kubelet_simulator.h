#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/util/result.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace kube_rdma {

// What the simulated kubelet knows about one resource, as the real one would.
struct SimulatedResource {
  std::string endpoint;                 // socket path dialled
  v1beta1::DevicePluginOptions options; // from GetDevicePluginOptions, called first
  std::vector<v1beta1::Device> devices; // the last ListAndWatch message (each one replaces it)
  int lists_received = 0;
  int registrations = 0;          // accepted Register calls
  int registered_generation = -1; // the kubelet generation (restarts) of the last registration
  bool streaming = false;         // a ListAndWatch stream is open
  std::chrono::steady_clock::time_point registered_at;

  int healthyCount() const;
};

struct KubeletView {
  std::map<std::string, SimulatedResource> resources;
  std::vector<std::string> rejections; // Register errors returned to plugins
  int generation = 0;                  // restarts so far
};

// A kubelet device manager for tests, behaving as the kubelet does (docs/plugin.md and the
// kubelet's device manager): serves Registration on <dir>/kubelet.sock, rejects unsupported
// versions and names that are not extended resource names, dials <dir>/<endpoint>, calls
// GetDevicePluginOptions first, then streams ListAndWatch; Allocate and GetPreferredAllocation send
// one container per RPC; restart() wipes the directory's sockets and serves kubelet.sock again.
class KubeletSimulator {
public:
  explicit KubeletSimulator(std::string dir);
  ~KubeletSimulator();

  Status start();
  // A kubelet restart: stop, remove every socket in the directory, serve kubelet.sock again.
  Status restart();
  void stop();

  const std::string& dir() const { return dir_; }
  KubeletView view() const;
  // Waits until `predicate` holds on the view, or `timeout` passes. @return whether it held.
  bool waitFor(const std::function<bool(const KubeletView&)>& predicate,
               std::chrono::milliseconds timeout) const;

  Result<v1beta1::ContainerAllocateResponse> allocate(const std::string& resource,
                                                      const std::vector<std::string>& ids);
  // Fails, as the kubelet would not call it, unless the plugin advertised it.
  Result<std::vector<std::string>> preferredAllocation(const std::string& resource,
                                                       const std::vector<std::string>& available,
                                                       const std::vector<std::string>& must_include,
                                                       int32_t size);

private:
  class RegistrationService;
  struct Client {
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
    std::unique_ptr<grpc::ClientContext> stream_context;
    std::thread stream_thread;
  };

  grpc::Status onRegister(const v1beta1::RegisterRequest& request);
  void runStream(const std::string& resource, Client& client, int generation);
  void dropClients();
  v1beta1::DevicePlugin::Stub* stubFor(const std::string& resource);

  const std::string dir_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  KubeletView view_;
  std::map<std::string, std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<Client>> retired_; // joined outside the lock
};

// The kubelet's IsExtendedResourceName: "domain/name", not in the kubernetes.io namespace, and a
// qualified name once prefixed with "requests.".
bool isExtendedResourceName(const std::string& name);

} // namespace kube_rdma
