#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "webhook/policy.h"
#include "webhook/pod_fields.h"

// What the mutator needs to know about a pod before it decides anything, kept apart from the
// decisions so each rule about the pod's shape is stated once. Read-only: members of another shape
// are read as absent, never as an error.
namespace kube_rdma {

// Where NCCL's shared memory lives; the mutator mounts a memory volume there.
inline constexpr const char* kShmPath = "/dev/shm";
// A container asks for a resource in either list: Kubernetes fills one from the other.
inline constexpr const char* kResourceLists[] = {"limits", "requests"};

// The first of the policy's RDMA resources the container asks for, nullptr when none.
const std::string* rdmaResourceOf(JsonElement container, const WebhookPolicy& policy);

// The first profile whose every node label the pod is pinned to, nullptr when none: a profile's
// settings are only right when the pod cannot land outside its pool.
const NodePoolProfile* pickProfile(JsonElement spec, const WebhookPolicy& policy);

// Whether the pod shares the node's network namespace, where the pod-network interface is wrong.
bool usesHostNetwork(JsonElement spec);

// The container's env entry `name`, nullopt when it has none.
std::optional<JsonElement> envEntry(JsonElement container, std::string_view name);

// Granted IPC_LOCK already (privileged, listed, or ALL), or dropped on purpose: the user decided.
bool decidesIpcLock(JsonElement container);

// Whether something is mounted at /dev/shm or above it: a second mount there would clash.
bool mountsShm(JsonElement container);

// The sizeLimit of a memory emptyDir volume, "" when it has none; nullopt for another volume.
std::optional<std::string_view> shmVolumeSizeLimit(JsonElement volume);

// Sum of the memory limits of the containers that run together (regular ones and native
// sidecars); nullopt when one of them has no limit, since then there is no pod limit.
std::optional<double> podMemoryLimit(JsonElement spec);

// Known to run as non-root from the pod alone; an image's own USER is not visible here.
bool runsAsNonRoot(JsonElement spec, JsonElement container);

} // namespace kube_rdma
