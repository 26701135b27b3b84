#include "dra/flags.h"

#include "common/util/command_line.h"

namespace kube_rdma {

Result<DraFlags> parseDraFlags(const std::vector<std::string>& args,
                               const std::string& node_name_env) {
  DraFlags flags;
  flags.node_name = node_name_env;
  auto app = makeApp("rdma-dra-driver",
                     "rdma-dra-driver: publishes the node's RDMA ports for Dynamic Resource "
                     "Allocation and prepares the ResourceClaims that get them.");
  app->add_option("--node-name", flags.node_name, "this node (default: $NODE_NAME)")
      ->type_name("NAME");
  app->add_option("--config", flags.config_path,
                  "pools and NCCL options, the device plugin's format (JSON); default: every "
                  "InfiniBand and RoCE port but the management NIC's and VFs")
      ->type_name("FILE");
  app->add_option("--kubeconfig", flags.kubeconfig,
                  "how to reach the API server (default: the pod's service account)")
      ->type_name("FILE");
  addNodeRootOptions(*app, flags.sysfs_root, flags.proc_root, flags.dev_root);
  app->add_option("--plugin-registry-dir", flags.plugin_registry_dir,
                  "the kubelet's plugin watcher directory (registration socket)")
      ->type_name("DIR");
  app->add_option("--plugin-dir", flags.plugin_dir, "where the DRA socket dra.sock goes")
      ->type_name("DIR");
  app->add_option("--cdi-dir", flags.cdi_dir, "where the per-claim CDI specs go")->type_name("DIR");
  app->add_option("--state-dir", flags.state_dir, "the checkpoint and the claims' nccl.conf files")
      ->type_name("DIR");
  addMetricsAddressOption(*app, flags.metrics_address,
                          "serve /metrics, /healthz and /readyz (default: off)");
  addPodResourcesSocketOption(*app, flags.pod_resources_socket);
  addNriOptions(*app, flags.nri_socket, flags.host_proc_root);
  addDurationOption(
      *app, "--health-timeout", std::chrono::milliseconds(100), std::chrono::hours(24),
      [&flags](std::chrono::milliseconds d) {
        flags.health_timeout = d;
        return std::string();
      },
      "/healthz fails when the kubelet has not registered the driver, or no ResourceSlice round "
      "has succeeded, for this long (default 1m)");
  app->add_flag("--share-ports", flags.share_ports,
                "publish the ports of shared pools as allocatable to many claims at once, each "
                "taking one of the pool's tenants (Kubernetes 1.37: consumable capacity)");
  addNfdFeaturesOptions(*app, flags.nfd_features_file, flags.nfd_features_ttl);
  addLogFormatOption(*app, flags.log_format);

  Result<DraFlags> parsed = parseFlags(*app, args, flags);
  if (parsed && parsed->exit_message.empty() && parsed->node_name.empty()) {
    return makeError("--node-name (or NODE_NAME) is required: the pool is named after the node");
  }
  return parsed;
}

} // namespace kube_rdma
