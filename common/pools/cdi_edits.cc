#include "common/pools/cdi_edits.h"

namespace kube_rdma {
namespace {

// The marker that tells rdmactl doctor the runtime applied CDI at all (containerd 1.7 ignores CDI
// silently unless enable_cdi is on).
constexpr const char* kCdiMarkerEnv = "KUBE_RDMA_CDI=1";

// The RDMA connection manager, which every RDMA container needs whatever HCAs it has.
nlohmann::ordered_json rdmaCmDeviceNode() {
  return {{"path", "/dev/infiniband/rdma_cm"}, {"permissions", "rw"}};
}

// The createRuntime hook that runs kube-rdma-memlock-hook (docs/memlock.md); null when the limit
// is off.
nlohmann::ordered_json memlockHook(const MemlockHookConfig& memlock) {
  if (memlock.limit.mode == MemlockLimit::Mode::kOff) {
    return nullptr;
  }
  // createRuntime runs in the runtime's namespaces: the state's pid, the paths and the
  // capabilities are the host's, also for user-namespaced pods (docs/memlock.md compares the
  // stages).
  return {{"hookName", "createRuntime"},
          {"path", memlock.hook_path},
          {"args",
           {"kube-rdma-memlock-hook", "--memlock=" + memlockLimitText(memlock.limit),
            "--log-file=" + memlock.log_file}}};
}

// The createContainer hook that resolves the GID index in the container's own network namespace
// (docs/pod-networks.md): createContainer runs in the container's namespaces, after CNI, before
// pivot_root, where the runtime's view of the host and the container's root are both at hand.
nlohmann::ordered_json ncclHook(const NcclHookConfig& hook, const NcclPoolOptions& nccl) {
  nlohmann::ordered_json args = {
      "kube-rdma-nccl-hook", "--container-path=" + nccl.nccl_conf_path,
      "--addr-family=" +
          std::string(nccl.gid_policy.family == GidFamily::kIPv6 ? "AF_INET6" : "AF_INET")};
  if (nccl.gid_policy.range) {
    args.push_back("--addr-range=" + cidrText(*nccl.gid_policy.range));
  }
  args.push_back("--sysfs-root=" + hook.sysfs_root);
  args.push_back("--log-file=" + hook.log_file);
  return {{"hookName", "createContainer"}, {"path", hook.hook_path}, {"args", std::move(args)}};
}

} // namespace

nlohmann::ordered_json cdiSpec(const std::string& kind, const std::vector<CdiDevice>& devices,
                               const std::vector<std::string>& env, nlohmann::ordered_json mounts,
                               const CdiHooks& hooks) {
  using Json = nlohmann::ordered_json;
  Json device_list = Json::array();
  for (const CdiDevice& device : devices) {
    device_list.push_back({{"name", device.name},
                           {"containerEdits",
                            {{"deviceNodes", Json::array({{{"path", device.uverbs_path},
                                                           {"permissions", "rw"}}})}}}});
  }
  Json variables = Json::array({kCdiMarkerEnv});
  for (const std::string& variable : env) {
    variables.push_back(variable);
  }
  Json edits = {{"env", std::move(variables)}, {"deviceNodes", Json::array({rdmaCmDeviceNode()})}};
  if (!mounts.empty()) {
    edits["mounts"] = std::move(mounts);
  }
  Json hook_list = Json::array();
  if (Json hook = memlockHook(hooks.memlock); !hook.is_null()) {
    hook_list.push_back(std::move(hook));
  }
  if (hooks.per_container != nullptr) {
    hook_list.push_back(ncclHook(hooks.nccl, *hooks.per_container));
  }
  if (!hook_list.empty()) {
    edits["hooks"] = std::move(hook_list);
  }
  return {{"cdiVersion", "0.5.0"},
          {"kind", kind},
          {"devices", std::move(device_list)},
          {"containerEdits", std::move(edits)}};
}

std::string cdiSpecFile(const std::string& cdi_dir, const std::string& kind,
                        const std::string& suffix) {
  std::string file = kind;
  file[file.find('/')] = '-';
  return cdi_dir + "/" + file + suffix + ".json";
}

} // namespace kube_rdma
