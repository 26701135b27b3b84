#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/pools/nccl_settings.h"
#include "common/util/result.h"

namespace kube_rdma {

// A device of a ResourceClaim a container uses, as the kubelet's PodResources API names it.
struct ClaimDeviceHeld {
  std::string claim_namespace;
  std::string claim_name;
  std::string driver;
  std::string pool;
  std::string device;
  bool operator==(const ClaimDeviceHeld&) const = default;
};

// What a running container holds, by the kubelet's account.
struct ContainerHoldings {
  std::string pod_namespace;
  std::string pod;
  std::string container;
  std::map<std::string, std::vector<std::string>> device_ids; // by device-plugin resource name
  std::vector<ClaimDeviceHeld> claim_devices;
  bool operator==(const ContainerHoldings&) const = default;
};

// Every running container that holds a device or a claim, from the kubelet's PodResources List
// on its unix socket (/var/lib/kubelet/pod-resources/kubelet.sock). `deadline` bounds the call.
Result<std::vector<ContainerHoldings>> listPodResources(const std::string& socket,
                                                        std::chrono::milliseconds deadline);

// listPodResources for a daemon's /metrics, bounded by 2 s: nullopt when off (no socket) or when
// the call failed, which `on_error` counts and the log says once until the error changes (not
// at every scrape). Thread-safe.
class PodResourcesReader {
public:
  PodResourcesReader(std::string socket, Logger& logger, std::function<void()> on_error)
      : socket_(std::move(socket)), logger_(logger), on_error_(std::move(on_error)) {}
  std::optional<std::vector<ContainerHoldings>> read();

private:
  const std::string socket_;
  Logger& logger_;
  const std::function<void()> on_error_;
  std::mutex mutex_;
  std::string last_error_; // guarded by mutex_
};

// kube_rdma_pod_port_info, empty: 1 per running container and RDMA port it holds, which both
// daemons serve to be joined on device and port with the port counters.
ScrapedFamily podPortInfoFamily();
// A sample's labels: the container's namespace, pod and name, `held_as` (the device plugin's
// {"resource", name}, the DRA driver's {"claim", name}) and the port.
Labels podPortLabels(const ContainerHoldings& container,
                     const std::pair<std::string, std::string>& held_as, const HcaPort& port);

} // namespace kube_rdma
