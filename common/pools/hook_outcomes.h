#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/pools/plugin_config.h"
#include "common/util/result.h"

// How many containers kube-rdma-nccl-hook has seen, by outcome. The hook adds each run to a small
// file beside its log; rdma-device-plugin and rdma-dra-driver export the file as
// kube_rdma_nccl_hook_containers_total{outcome}, so a fleet shows which pods on a pod network did
// not get a GID index of their own (docs/pod-networks.md).
namespace kube_rdma {

enum class NcclHookOutcome {
  kOwnGidIndex,   // the container's nccl.conf now has its own namespace's index
  kHostNetwork,   // the host's namespace: the node's settings are the container's
  kUserSet,       // NCCL_IB_GID_INDEX in the container's environment: left alone
  kNoOwnGid,      // no GID of the namespace on a port (a veth-only pod): the node's index stays
  kPortsDisagree, // the ports' own GIDs have different indexes: NCCL takes one, the node's stays
  kNoRocePort,    // the granted ports are InfiniBand: no GID index to choose
  kNoNcclConf,    // the container has no nccl.conf mount to replace
  kError,         // something could not be read or mounted: the node's nccl.conf stays
  // The kernel's exclusive RDMA netns mode, and no sysfs of the container's namespace to read
  // its own devices in (the NRI plugin, before the runtime mounts one): the hook resolves it
  kExclusiveNetns,
};
inline constexpr std::array<std::string_view, 9> kNcclHookOutcomeNames{
    "own-gid-index", "host-network", "user-set", "no-own-gid",     "ports-disagree",
    "no-roce-port",  "no-nccl-conf", "error",    "exclusive-netns"};
std::string_view toString(NcclHookOutcome outcome);

using HookOutcomeCounts = std::map<std::string, uint64_t, std::less<>>;

// "<log_file>.counts": where the hook whose log is `log_file` keeps its counts.
std::string hookCountsPath(const std::string& log_file);

// "OUTCOME COUNT" lines; an error names the first line that is not one.
Result<HookOutcomeCounts> parseHookOutcomeCounts(std::string_view text);
std::string renderHookOutcomeCounts(const HookOutcomeCounts& counts);

// Adds one container with `outcome` to the file at `path` (made if missing) under an exclusive
// flock: the hooks of containers that start together count one at a time. A file that does not
// parse is started again, and the error says so.
Status countHookOutcome(const std::string& path, NcclHookOutcome outcome);

// The file at `path` as kube_rdma_nccl_hook_containers_total: every known outcome, 0 when absent
// (no file yet: no container has started since the hook was installed). A file that cannot be
// read or parsed is an error naming it.
Result<ScrapedFamily> hookOutcomeFamily(const std::string& path);

// What a daemon's scrape adds for the hook that `hook` configures: none when the hook is off; a
// counts file that cannot be read is logged and left out, and the other metrics still serve.
std::vector<ScrapedFamily> scrapeHookOutcomes(const NcclHookConfig& hook, Logger& log);

} // namespace kube_rdma
