#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/pools/container_nccl.h"
#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/util/pod_warning.h"
#include "nri/nri_plugin.h"
#include "nri/nri_session.h"

// What kube-rdma's NRI plugin does when the runtime creates a container: for a container that
// carries kube-rdma-nccl-hook (a RoCE pool whose GID index is resolved per container), it
// resolves the index in the pod's network namespace, which CNI has set up by now, with the same
// rule and arguments as the hook, and puts NCCL_IB_GID_INDEX into the container's environment.
// The hook still writes the same index into its nccl.conf for processes that do not inherit the
// environment (docs/nri.md).
namespace kube_rdma {

struct NcclEnvAdjusterOptions {
  std::string sysfs_root = "/sys";
  // The host's /proc (its PID namespace): <root>/<sandbox pid>/net is the pod's network.
  std::string host_proc_root = "/proc";
  // The hook is recognised by this file name, wherever ncclHookPath put it.
  std::string hook_name = "kube-rdma-nccl-hook";
};

// The adjustment for one container, and what was decided; `carries_hook` false means the
// container is not kube-rdma's to adjust (no decision, nothing logged).
struct NcclEnvAdjustment {
  bool carries_hook = false;
  ContainerGidDecision decision;
  nriapi::ContainerAdjustment adjust;
};

// Reads only the container's nccl.conf, the granted ports' GID tables and the sandbox's
// /proc/<pid>/net; adds NCCL_IB_GID_INDEX and kNriGidIndexAnnotation for kOwnGidIndex alone.
NcclEnvAdjustment adjustNcclEnv(const nriapi::CreateContainerRequest& request,
                                const NcclEnvAdjusterOptions& options);

// The warning for `adjusted`, if its outcome is one the user should see on the pod:
// ports-disagree (RdmaGidPortsDisagree) and error (RdmaGidIndexUnresolved).
std::optional<PodWarning> podWarningOf(const nriapi::CreateContainerRequest& request,
                                       const NcclEnvAdjustment& adjusted);

// The plugin's CreateContainer: adjustNcclEnv, logged and counted as
// kube_rdma_nri_containers_total{outcome} (every outcome at 0 from the start), and a warning to
// `warn` (when set) for what podWarningOf picks.
class NcclEnvAdjuster {
public:
  NcclEnvAdjuster(NcclEnvAdjusterOptions options, MetricsRegistry& metrics, Logger& log,
                  PodWarningSink warn = nullptr);
  nriapi::ContainerAdjustment operator()(const nriapi::CreateContainerRequest& request);

private:
  NcclEnvAdjusterOptions options_;
  MetricsRegistry& metrics_;
  Logger& log_;
  PodWarningSink warn_;
};

// The node daemons' NRI plugin: an NcclEnvAdjuster behind an NriPlugin on `socket`, started;
// nullptr when `socket` is empty (NRI off). `on_pod` hears of every pod the runtime names.
std::unique_ptr<NriPlugin> startNcclEnvPlugin(const std::string& socket,
                                              NcclEnvAdjusterOptions options,
                                              MetricsRegistry& metrics, Logger& log,
                                              PodWarningSink warn = nullptr,
                                              PodSeenHandler on_pod = nullptr);

} // namespace kube_rdma
