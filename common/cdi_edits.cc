#include "common/cdi_edits.h"

namespace kube_rdma {

nlohmann::ordered_json rdmaCmDeviceNode() {
  return {{"path", "/dev/infiniband/rdma_cm"}, {"permissions", "rw"}};
}

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

} // namespace kube_rdma
