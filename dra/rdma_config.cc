#include "dra/rdma_config.h"

#include <algorithm>

#include "common/util/json_reader.h"

namespace kube_rdma {

Result<RdmaConfig> parseRdmaConfig(const nlohmann::json& parameters, const std::string& path) {
  JsonErrors errors;
  ObjectReader r(parameters, path, errors);
  RdmaConfig config;
  if (parameters.is_object()) {
    r.requiredEnum("apiVersion", {kRdmaConfigApiVersion});
    r.requiredEnum("kind", {kRdmaConfigKind});
    for (const char* key : {"gidIndex", "addrFamily", "addrRange", "ncclConf", "env", "memlock"}) {
      if (r.has(key)) {
        config.given.insert(key);
      }
    }
    readNcclOptions(r, config.nccl);
    config.memlock = readMemlockLimit(r, "memlock", config.memlock);
    r.finish();
  }
  if (auto status = errors.status(); !status.ok()) {
    return status.error();
  }
  return config;
}

RdmaConfig mergeRdmaConfig(const RdmaConfig& base, const RdmaConfig& overlay) {
  RdmaConfig merged = base;
  const auto gives = [&overlay](const char* key) { return overlay.given.contains(key); };
  if (gives("gidIndex")) {
    merged.nccl.gid_index_mode = overlay.nccl.gid_index_mode;
    merged.nccl.gid_index = overlay.nccl.gid_index;
  }
  if (gives("addrFamily")) {
    merged.nccl.gid_policy.family = overlay.nccl.gid_policy.family;
  }
  if (gives("addrRange")) {
    merged.nccl.gid_policy.range = overlay.nccl.gid_policy.range;
  }
  if (gives("ncclConf")) {
    merged.nccl.nccl_conf_enabled = overlay.nccl.nccl_conf_enabled;
    merged.nccl.nccl_conf_path = overlay.nccl.nccl_conf_path;
  }
  if (gives("memlock")) {
    merged.memlock = overlay.memlock;
  }
  for (const auto& [name, value] : overlay.nccl.env) {
    auto same = std::find_if(merged.nccl.env.begin(), merged.nccl.env.end(),
                             [&env_name = name](const auto& e) { return e.first == env_name; });
    if (same != merged.nccl.env.end()) {
      same->second = value;
    } else {
      merged.nccl.env.emplace_back(name, value);
    }
  }
  merged.given.insert(overlay.given.begin(), overlay.given.end());
  return merged;
}

} // namespace kube_rdma
