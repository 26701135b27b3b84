#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/pools/memlock.h"
#include "common/pools/plugin_config.h"
#include "common/util/result.h"

// The opaque configuration a DeviceClass or a ResourceClaim hands the DRA driver
// (docs/dra.md "RdmaConfig"): the NCCL keys of a device-plugin pool's "nccl" object and the
// memlock limit, with the same meanings and the same strict validation.
namespace kube_rdma {

inline constexpr const char* kRdmaConfigApiVersion = "rdma.kube-rdma.io/v1alpha1";
inline constexpr const char* kRdmaConfigKind = "RdmaConfig";

// One RdmaConfig as given. `given` names the keys it sets, so that a later config overrides
// only those (gidIndex, addrFamily, addrRange, ncclConf, env, memlock).
struct RdmaConfig {
  NcclPoolOptions nccl;
  MemlockLimit memlock;
  std::set<std::string> given;
  bool operator==(const RdmaConfig&) const = default;
};

// Parses `parameters` (the opaque object) found at `path` in its document, e.g.
// "status.allocation.devices.config[1].opaque.parameters". Errors name the full path of every
// bad field: "<path>.gidIndex: expected ...". apiVersion and kind are required and exact;
// unknown keys are errors.
Result<RdmaConfig> parseRdmaConfig(const nlohmann::json& parameters, const std::string& path);

// `base` with every key `overlay` gives taken from `overlay` (env by name).
RdmaConfig mergeRdmaConfig(const RdmaConfig& base, const RdmaConfig& overlay);

} // namespace kube_rdma
