#include "plugin/cdi_spec.h"

#include <nlohmann/json.hpp>

#include "plugin/pool_resource_manager.h"

namespace kube_rdma {

std::string cdiSpecJson(const NodePool& pool, const NodeTopology& topology,
                        const MemlockHookConfig& memlock) {
  nlohmann::ordered_json spec;
  spec["cdiVersion"] = "0.5.0";
  spec["kind"] = cdiKind(pool.spec.resource_name);
  spec["devices"] = nlohmann::ordered_json::array();
  for (const auto& name : pool.deviceNames()) {
    const RdmaDevice* device = topology.findDevice(name);
    if (!device || device->uverbs.empty()) {
      continue;
    }
    spec["devices"].push_back(
        {{"name", name},
         {"containerEdits",
          {{"deviceNodes", {{{"path", device->uverbsDevicePath()}, {"permissions", "rw"}}}}}}});
  }
  spec["containerEdits"] = {
      {"env", {"KUBE_RDMA_CDI=1"}},
      {"deviceNodes", {{{"path", "/dev/infiniband/rdma_cm"}, {"permissions", "rw"}}}}};
  if (memlock.limit.mode != MemlockLimit::Mode::kOff) {
    // createRuntime runs in the runtime's namespaces: the state's pid, the paths and the
    // capabilities are the host's, also for user-namespaced pods (docs/memlock.md compares the
    // stages).
    spec["containerEdits"]["hooks"] = {
        {{"hookName", "createRuntime"},
         {"path", memlock.hook_path},
         {"args",
          {"kube-rdma-memlock-hook", "--memlock=" + memlockLimitText(memlock.limit),
           "--log-file=" + memlock.log_file}}}};
  }
  return spec.dump(2) + "\n";
}

std::string cdiSpecPath(const std::string& cdi_dir, const std::string& resource_name) {
  std::string kind = cdiKind(resource_name);
  kind[kind.find('/')] = '-';
  return cdi_dir + "/" + kind + ".json";
}

} // namespace kube_rdma
