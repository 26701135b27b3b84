#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/pools/plugin_config.h"

// The container edits every kube-rdma CDI spec carries at spec level (the device plugin's CDI
// mode and the DRA driver's per-claim specs), so both daemons write them the same way.
namespace kube_rdma {

// A device of a CDI spec: its name and the uverbs node it gives the container.
struct CdiDevice {
  std::string name;
  std::string uverbs_path;
};

// The hooks of a spec: the memlock hook unless its limit is off, and kube-rdma-nccl-hook when
// `per_container` (the NCCL options of the spec's ports) is given.
struct CdiHooks {
  MemlockHookConfig memlock;
  NcclHookConfig nccl;
  const NcclPoolOptions* per_container = nullptr;
};

// A CDI spec of `kind` with `devices` and the spec-level edits: the marker and `env`, rdma_cm,
// `mounts` when not empty, and the hooks.
nlohmann::ordered_json cdiSpec(const std::string& kind, const std::vector<CdiDevice>& devices,
                               const std::vector<std::string>& env, nlohmann::ordered_json mounts,
                               const CdiHooks& hooks);

// Where a spec of `kind` goes in `cdi_dir`: "<vendor>-<class><suffix>.json".
std::string cdiSpecFile(const std::string& cdi_dir, const std::string& kind,
                        const std::string& suffix = "");

} // namespace kube_rdma
