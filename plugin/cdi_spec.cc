#include "plugin/cdi_spec.h"

#include <nlohmann/json.hpp>

#include "common/cdi_edits.h"
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
  using Json = nlohmann::ordered_json;
  spec["containerEdits"] = {{"env", Json::array({kCdiMarkerEnv})},
                            {"deviceNodes", Json::array({rdmaCmDeviceNode()})}};
  if (auto hook = memlockHook(memlock); !hook.is_null()) {
    spec["containerEdits"]["hooks"] = Json::array({std::move(hook)});
  }
  return spec.dump(2) + "\n";
}

std::string cdiSpecPath(const std::string& cdi_dir, const std::string& resource_name) {
  std::string kind = cdiKind(resource_name);
  kind[kind.find('/')] = '-';
  return cdi_dir + "/" + kind + ".json";
}

} // namespace kube_rdma
