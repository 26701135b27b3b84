#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/node/device_model.h"
#include "common/pools/nccl_settings.h"
#include "common/checks/node_checks.h"
#include "common/pools/plugin_config.h"

// rdmactl doctor: the guide's node checks as pure functions over facts gathered at the edge
// (main.cc), so every verdict is testable without the host.
namespace kube_rdma {

// Limits of the current process.
struct ProcessFacts {
  std::optional<uint64_t> memlock_bytes; // RLIMIT_MEMLOCK soft limit; nullopt = unlimited
  bool cap_ipc_lock = false;             // in the effective set
  std::optional<uint64_t> shm_bytes;     // size of /dev/shm; nullopt = not mounted
};

struct DoctorInput {
  const NodeTopology* topology = nullptr;
  std::string dev_root;
  std::set<std::string> uverbs_nodes; // names present under <dev_root>/infiniband
  ProcessFacts process;
  NcclEnv nccl_env;                    // the process's NCCL_* variables
  NcclEnv nccl_conf;                   // /etc/nccl.conf's NAME=VALUE lines, which NCCL reads next
  std::vector<std::string> interfaces; // netdev names of the node
  // The node checks (common/checks/node_checks.h) run when both are set.
  const PluginConfig* config = nullptr;
  const NodeSnapshot* snapshot = nullptr;
};

// In this order: rdma-devices, ports-active, roce-gids, uverbs-nodes, the node checks (when
// input.snapshot is set), memlock, dev-shm, then
// nccl-env (always), and nccl-ib-disable, nccl-ib-hca, nccl-ib-gid-index, nccl-socket-ifname
// when those variables are set, and nccl-gid-namespace when NCCL_IB_HCA (environment or nccl.conf)
// names a RoCE port.
std::vector<Check> runDoctor(const DoctorInput& input);

bool anyFailed(const std::vector<Check>& checks);
// One line per check (verdict, name, detail), its hint and, unless ok, its evidence; a summary.
std::string renderChecksText(const std::vector<Check>& checks);
// {"ok", "summary": {"ok", "warn", "fail", "unknown"}, "checks": [{"name", "verdict", "detail",
// "hint", "evidence": [{"path", "value"}]}]}: docs/rdmactl.md.
std::string renderChecksJson(const std::vector<Check>& checks);

// Thresholds: below kShmFailBytes NCCL's shared-memory transport fails to extend /dev/shm (the
// container default is 64 MiB); below kShmWarnBytes large jobs may. Memlock: node_checks.h.
constexpr uint64_t kShmFailBytes = 256ull << 20;
constexpr uint64_t kShmWarnBytes = 1ull << 30;

} // namespace kube_rdma
