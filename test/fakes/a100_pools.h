#pragma once

#include <string>

#include "common/pools/plugin_config.h"
#include "common/pools/pools.h"
#include "common/node/sysfs_discovery.h"

// The bundled A100 RoCE fixture (test/fixtures/gen_sysfs.py) as the plugin sees it: its topology
// and its rdma/shared pool of the default config, for tests of what pods hold.
namespace kube_rdma {

inline const NodeTopology& a100Topology() {
  static const std::string root = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";
  static const NodeTopology topology = discoverFromSysfs({root + "/sys", root + "/proc"});
  return topology;
}

// rdma/shared of the default config (shared), its pools in `mode`: the eight data ports
// mlx5_1..mlx5_8.
inline NodePool a100SharedPool(PoolMode mode = PoolMode::kShared) {
  PluginConfig config = defaultPluginConfig();
  for (auto& spec : config.pools) {
    spec.mode = mode;
  }
  for (auto& pool : buildPools(a100Topology(), config)) {
    if (pool.spec.resource_name == "rdma/shared") {
      return pool;
    }
  }
  return {};
}

} // namespace kube_rdma
