#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/node/device_model.h"
#include "common/pools/plugin_config.h"
#include "common/pools/pools.h"

// What rdma-dra-driver publishes (docs/dra.md "The ResourceSlice"): one DRA device per RDMA port
// that the pools take, in one pool named after the node.
namespace kube_rdma {

inline constexpr const char* kDraDriverName = "rdma.kube-rdma.io";

// The API's limits (resource.k8s.io/v1).
inline constexpr size_t kMaxDevicesPerSlice = 128;
inline constexpr size_t kMaxAttributeStringLength = 64;

// One published port and where it comes from. The pointers point into the topology and the
// pools it was built from.
struct DraPort {
  std::string name; // the DRA device name
  const RdmaDevice* device = nullptr;
  const Port* port = nullptr;
  const NodePool* pool = nullptr;
};

// A DNS label that stays the same for the same hardware across restarts and renames:
// "pci-0000-13-00-0-p1" from PCI address 0000:13:00.0, port 1; a device without a PCI function
// (soft-RoCE) is named after its kernel name instead: "rdma-rxe0-p1".
std::string draDeviceName(const RdmaDevice& device, uint32_t port);

// Why a published port cannot serve a new pod, in two forms: `reason` a label value for the
// device's taint ("DOWN", "INIT", "NoUverbsDevice"), `message` a sentence for the pod status.
struct PortProblem {
  std::string reason;
  std::string message;
};

// The device plugin's health rule: a port serves when it is ACTIVE and its HCA has a uverbs
// device node. nullopt when it serves.
std::optional<PortProblem> portProblem(const RdmaDevice& device, const Port& port);

// The taint a port with a problem gets in the slice (effect NoSchedule: the scheduler allocates
// it to no claim that does not tolerate it; pods already running on it stay).
inline constexpr const char* kUnhealthyTaintKey = "rdma.kube-rdma.io/unhealthy";

// Every port the pools take, in topology order.
std::vector<DraPort> publishedPorts(const NodeTopology& topology,
                                    const std::vector<NodePool>& pools);

struct SliceOwner {
  std::string node_name;
  std::string node_uid; // for the ownerReference, so the slices go with the Node
};

// What the operator chose for the published devices.
struct SliceOptions {
  // A port of a shared pool gets allowMultipleAllocations and the capacity kTenantsCapacity:
  // many claims at once, each consuming one tenant unless it asks for more.
  bool share_ports = false;
};

// The capacity of a shared port: how many claims it takes at once, the pool's shared count (as
// many pods as the device plugin admits to the pool, each of which uses all its ports).
inline constexpr const char* kTenantsCapacity = "tenants";

struct SliceSet {
  std::vector<nlohmann::ordered_json>
      slices;                        // resourceSliceCount of them, at most 128 devices each
  std::vector<std::string> warnings; // attributes left out, saying why
};

// The ResourceSlices (resource.k8s.io/v1) of the node's pool at `generation`: spec.driver,
// spec.nodeName, spec.pool {name = node, generation, resourceSliceCount}, the devices with their
// attributes (docs/dra.md lists them), metadata.generateName "<node>-rdma.kube-rdma.io-" and an
// ownerReference to the Node; a port with a problem carries the taint kUnhealthyTaintKey with
// the reason as its value; with options.share_ports, a port of a shared pool is allocatable to
// many claims (kTenantsCapacity). A value the API would reject (a string over 64 characters) is
// left out with a warning rather than failing the whole slice.
SliceSet resourceSlicesFor(const NodeTopology& topology, const PluginConfig& config,
                           const SliceOwner& owner, int64_t generation,
                           const SliceOptions& options = {});

} // namespace kube_rdma
