#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "common/util/result.h"

// What one pool advertises and hands out, independent of gRPC: the DevicePluginService is a thin
// translation of these plain structs to and from the kubelet's messages.
namespace kube_rdma {

inline constexpr const char* kHealthy = "Healthy";
inline constexpr const char* kUnhealthy = "Unhealthy";

struct PluginDevice {
  std::string id;
  bool healthy = false;
  std::optional<int> numa_node; // nullopt: no NUMA preference (the kernel said -1, or shared IDs)

  bool operator==(const PluginDevice&) const = default;
};

// A versioned device list; the version changes whenever the list does (or a re-send is forced).
struct DeviceList {
  uint64_t version = 0;
  std::vector<PluginDevice> devices;
  bool closed = false; // the pool is going away: streams end
};

struct DeviceNodeSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions;
};

struct MountSpec {
  std::string container_path;
  std::string host_path;
  bool read_only = true;
};

// The answer for one container, in the order the kubelet will see it.
struct ContainerAllocation {
  std::vector<DeviceNodeSpec> devices;
  std::vector<std::pair<std::string, std::string>> envs;
  std::vector<MountSpec> mounts;
  std::vector<std::string> cdi_devices; // fully qualified CDI names
};

class ResourceManager {
public:
  virtual ~ResourceManager() = default;

  /** @return the extended resource name, e.g. "rdma/shared". */
  virtual std::string resourceName() const = 0;

  /** @return whether GetPreferredAllocation is worth asking (exclusive pools). */
  virtual bool preferredAllocationAvailable() const = 0;

  virtual DeviceList devices() const = 0;

  /**
   * Blocks until the list's version differs from `seen`, the pool closes, `stop` is requested or
   * `timeout` passes.
   * @return the list at that moment (the same version on timeout or stop).
   */
  virtual DeviceList waitForChange(uint64_t seen, std::chrono::milliseconds timeout,
                                   std::stop_token stop) const = 0;

  /**
   * @return `size` IDs out of `available`, including every ID of `must_include`.
   */
  virtual Result<std::vector<std::string>>
  preferredAllocation(const std::vector<std::string>& available,
                      const std::vector<std::string>& must_include, int32_t size) const = 0;

  /**
   * @return what the container gets for `ids`, or an Error naming the IDs that are unknown or
   * unhealthy (and a fresh list is published for the kubelet).
   */
  virtual Result<ContainerAllocation> allocate(const std::vector<std::string>& ids) = 0;
};

} // namespace kube_rdma
