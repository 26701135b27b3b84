#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/pools/nccl_settings.h"

// The pure parts of the end-to-end demo: what a container's environment ends up as and who set
// each value, a line diff for the patched pod, aligned text tables, the scheduler's part of the
// DRA claim (a NIC on its GPU's PCIe root), and the steps' tally behind the verdict. No I/O here.
namespace kube_rdma {

// One variable of a container's final environment and the layer it came from
// (DESIGN.md "NCCL settings: who sets what").
struct EnvOrigin {
  std::string name;
  std::string value;
  std::string source; // "user", "policy", "node" or "nccl.conf"
  // Values of other layers that lost, as (source, value), e.g. ("node", "=mlx5_1:1,...").
  std::vector<std::pair<std::string, std::string>> shadowed;
};

// The container runtime builds the environment from the device plugin's Allocate envs first and
// the pod spec env after, the later value of a name winning; NCCL then reads nccl.conf without
// overwriting. `user` is the container's env as written, `patched` the env after the webhook's
// patch (user entries plus the policy's). Only names starting with `prefix` are returned, in
// name order.
std::vector<EnvOrigin> finalEnvironment(const NcclEnv& user, const NcclEnv& patched,
                                        const NcclEnv& node, const NcclEnv& nccl_conf,
                                        const std::string& prefix);

// A unified diff of two texts split in lines: hunks "@@ -a,b +c,d @@" with `context` unchanged
// lines around each change, lines prefixed by ' ', '+' or '-'. Empty when the texts are equal.
std::vector<std::string> unifiedDiff(const std::vector<std::string>& before,
                                     const std::vector<std::string>& after, size_t context);

std::vector<std::string> splitLines(const std::string& text);

// Rows under a header, each column as wide as its widest cell, two spaces apart, no trailing
// blanks; every line starts with `indent`.
std::string formatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::string& indent);

// One device of a published ResourceSlice, the attributes the demo shows.
struct SliceDevice {
  std::string name;
  std::string rdma_device;
  std::string netdev;
  std::string link_layer;
  std::string state;
  std::string pcie_root;
};

// The devices of a ResourceSlice (resource.k8s.io/v1), in its order; absent attributes empty.
std::vector<SliceDevice> sliceDevices(const nlohmann::json& slice);

// The devices the scheduler may give a request of DeviceClass roce.rdma.kube-rdma.io (ACTIVE
// Ethernet ports) under `matchAttribute: resource.kubernetes.io/pcieRoot` with a GPU on
// `pcie_root`, in slice order: it takes the first one free.
std::vector<SliceDevice> roceDevicesOnRoot(const std::vector<SliceDevice>& devices,
                                           const std::string& pcie_root);

// One allocation result: which device of which driver the scheduler gave a request.
struct AllocatedDevice {
  std::string request;
  std::string driver;
  std::string device;
};

struct ClaimAllocation {
  std::string pod_name;
  std::string pod_uid;
  std::string pod_claim_name; // the pod's spec.resourceClaims[].name
  std::string node;           // also the pool of every result
  std::vector<AllocatedDevice> results;
};

// The ResourceClaim the resourceclaim controller makes from a ResourceClaimTemplate for a pod
// (named "<pod>-<pod claim name>-" plus a suffix, owned by the pod, its spec the template's
// spec.spec) with the status the scheduler writes when it allocates: the results, a node
// selector for the node, and the pod in reservedFor.
nlohmann::json allocatedClaim(const nlohmann::json& claim_template, const ClaimAllocation& a);

// The demo's steps as their checks end: a step passes when every check of it ran and passed,
// fails when one failed, and is skipped when none failed but one could not run (libnccl.so.2
// could not be loaded); a skipped step is never counted as passed.
class StepTally {
public:
  explicit StepTally(int steps) : steps_total_(steps) {}

  void begin(); // a new step; ends the one before
  void check(bool ok);
  void skip(); // a check that could not run
  void end();  // ends the step in progress, if any

  // True when every one of the steps was reached and none failed (some may have been skipped).
  bool pass() const { return passed_ + skipped_ == steps_total_; }
  // The verdict's counts: "10/10 steps", "8/10 steps, 2 skipped".
  std::string counts() const;

private:
  const int steps_total_;
  int passed_ = 0;
  int skipped_ = 0;
  bool open_ = false;
  bool step_failed_ = false;
  bool step_skipped_ = false;
};

} // namespace kube_rdma
