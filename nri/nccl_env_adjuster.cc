#include "nri/nccl_env_adjuster.h"

#include <utility>
#include <vector>

namespace kube_rdma {
namespace {

constexpr MetricFamily kNriContainers{
    "kube_rdma_nri_containers_total",
    "Containers kube-rdma's NRI plugin saw carrying kube-rdma-nccl-hook, by what their "
    "environment got (own-gid-index: NCCL_IB_GID_INDEX of their own network namespace)."};

const nriapi::Hook* ncclHookOf(const nriapi::Container& container, const std::string& name) {
  for (const auto& hook : container.hooks().create_container()) {
    const std::string& path = hook.path();
    if (path == name || path.ends_with("/" + name)) {
      return &hook;
    }
  }
  return nullptr;
}

// nri_gid_index stays empty: a value already in the environment, even another kube-rdma
// plugin's, is left alone (NRI fails a container whose variable two plugins set).
ContainerSpec specOf(const nriapi::CreateContainerRequest& request) {
  ContainerSpec spec;
  const auto& container = request.container();
  spec.env.assign(container.env().begin(), container.env().end());
  for (const auto& mount : container.mounts()) {
    spec.mounts.emplace_back(mount.destination(), mount.source());
  }
  for (const auto& ns : container.linux().namespaces()) {
    spec.own_network_namespace = spec.own_network_namespace || ns.type() == "network";
  }
  if (!request.pod().namespace_().empty()) {
    spec.pod = request.pod().namespace_() + "/" + request.pod().name();
  }
  return spec;
}

} // namespace

NcclEnvAdjustment adjustNcclEnv(const nriapi::CreateContainerRequest& request,
                                const NcclEnvAdjusterOptions& options) {
  NcclEnvAdjustment out;
  const nriapi::Hook* hook = ncclHookOf(request.container(), options.hook_name);
  if (hook == nullptr) {
    return out;
  }
  out.carries_hook = true;
  const ContainerSpec spec = specOf(request);
  // args[0] is the program's name, as OCI hooks have it.
  std::vector<std::string> hook_args(hook->args().begin(), hook->args().end());
  if (!hook_args.empty()) {
    hook_args.erase(hook_args.begin());
  }
  const NcclHookArgs args = parseNcclHookArgs(hook_args);
  const LogField pod{"pod", spec.pod};
  const LogField container{"container", request.container().id()};
  if (!args.problem.empty()) {
    out.decision.message = "the container's kube-rdma-nccl-hook has a bad argument";
    out.decision.level = LogLevel::kError;
    out.decision.fields = {pod, container, {"error", args.problem}};
    return out;
  }
  const uint32_t pid = request.pod().pid();
  if (spec.own_network_namespace && pid == 0) {
    out.decision.message = "the runtime gave no process of the pod's sandbox: its network "
                           "namespace cannot be read";
    out.decision.level = LogLevel::kError;
    out.decision.fields = {pod, container};
    return out;
  }
  ContainerGidInputs inputs{
      request.container().id(),
      args.container_path,
      {options.sysfs_root, options.host_proc_root + "/" + std::to_string(pid)},
      args.policy};
  // No root filesystem is mounted yet: in exclusive mode the decision leaves it to the hook.
  inputs.exclusive_rdma_netns = rdmaNetnsIsExclusive(options.sysfs_root);
  out.decision = decideContainerGid(spec, inputs);
  if (out.decision.outcome == NcclHookOutcome::kOwnGidIndex) {
    const std::string index = std::to_string(*out.decision.resolved->choice.index);
    auto* env = out.adjust.add_env();
    env->set_key("NCCL_IB_GID_INDEX");
    env->set_value(index);
    (*out.adjust.mutable_annotations())[kNriGidIndexAnnotation] = index;
  }
  return out;
}

std::optional<PodWarning> podWarningOf(const nriapi::CreateContainerRequest& request,
                                       const NcclEnvAdjustment& adjusted) {
  const ContainerGidDecision& decision = adjusted.decision;
  if (!adjusted.carries_hook || (decision.outcome != NcclHookOutcome::kPortsDisagree &&
                                 decision.outcome != NcclHookOutcome::kError)) {
    return std::nullopt;
  }
  std::string detail;
  for (const auto& [key, value] : decision.fields) {
    if (key == "ports" || key == "error") {
      detail = value;
    }
  }
  const auto& container = request.container().name();
  PodWarning warning{request.pod().namespace_(), request.pod().name(), request.pod().uid(), "", ""};
  if (decision.outcome == NcclHookOutcome::kPortsDisagree) {
    warning.reason = "RdmaGidPortsDisagree";
    warning.message = "container " + container +
                      ": its own RoCE GIDs sit at different indexes on its ports (" + detail +
                      ") and NCCL takes one index for all: it keeps the node's, not one of the "
                      "pod's network; give every rail the same GID layout";
  } else {
    warning.reason = "RdmaGidIndexUnresolved";
    warning.message =
        "container " + container + ": " + decision.message + (detail.empty() ? "" : ": " + detail);
  }
  return warning;
}

NcclEnvAdjuster::NcclEnvAdjuster(NcclEnvAdjusterOptions options, MetricsRegistry& metrics,
                                 Logger& log, PodWarningSink warn)
    : options_(std::move(options)), metrics_(metrics), log_(log), warn_(std::move(warn)) {
  for (const auto outcome : kNcclHookOutcomeNames) {
    metrics_.counter(kNriContainers, {{"outcome", std::string(outcome)}});
  }
}

nriapi::ContainerAdjustment
NcclEnvAdjuster::operator()(const nriapi::CreateContainerRequest& request) {
  NcclEnvAdjustment result = adjustNcclEnv(request, options_);
  if (!result.carries_hook) {
    return {};
  }
  const ContainerGidDecision& decision = result.decision;
  log_.log(decision.level, "NRI: " + decision.message, decision.fields);
  metrics_.counter(kNriContainers, {{"outcome", std::string(toString(decision.outcome))}}).inc();
  if (auto warning = podWarningOf(request, result); warning && warn_) {
    warn_(*warning);
  }
  return std::move(result.adjust);
}

std::unique_ptr<NriPlugin> startNcclEnvPlugin(const std::string& socket,
                                              NcclEnvAdjusterOptions options,
                                              MetricsRegistry& metrics, Logger& log,
                                              PodWarningSink warn, PodSeenHandler on_pod) {
  if (socket.empty()) {
    return nullptr;
  }
  NriPluginOptions plugin_options;
  plugin_options.socket_path = socket;
  auto plugin = std::make_unique<NriPlugin>(
      plugin_options, NcclEnvAdjuster(std::move(options), metrics, log, std::move(warn)), log,
      std::move(on_pod));
  plugin->start();
  return plugin;
}

} // namespace kube_rdma
