#include "plugin/flags.h"

#include "common/util/command_line.h"

namespace kube_rdma {

Result<PluginFlags> parsePluginFlags(const std::vector<std::string>& args) {
  PluginFlags flags;
  auto app = makeApp("rdma-device-plugin",
                     "rdma-device-plugin: advertises RDMA HCAs to the kubelet and hands them out.");
  app->add_option("--config", flags.config_path,
                  "pools and NCCL options (JSON); default: rdma/hca (InfiniBand) and rdma/shared "
                  "(RoCE), both shared, management NIC and VFs left out")
      ->type_name("FILE");
  addNodeRootOptions(*app, flags.sysfs_root, flags.proc_root, flags.dev_root);
  addDiscoveryOption(*app, flags.discovery);
  app->add_option("--device-plugin-dir", flags.device_plugin_dir, "the kubelet's plugin sockets")
      ->type_name("DIR");
  app->add_option("--plugin-registry-dir", flags.plugin_registry_dir,
                  "when it exists the plugin-watcher registration is used, else Register on "
                  "kubelet.sock")
      ->type_name("DIR");
  app->add_option("--state-dir", flags.state_dir, "topology.json and nccl.conf files")
      ->type_name("DIR");
  addMetricsAddressOption(*app, flags.metrics_address,
                          "serve /metrics and /healthz (default: off)");
  addPodResourcesSocketOption(*app, flags.pod_resources_socket);
  addNriOptions(*app, flags.nri_socket, flags.host_proc_root);
  app->add_option("--node-name", flags.node_name, "for logs")->type_name("NAME");
  addLogFormatOption(*app, flags.log_format);
  const auto kMinimum = std::chrono::milliseconds(1);
  const auto kMaximum = std::chrono::hours(24);
  addDurationOption(
      *app, "--resend-interval", kMinimum, kMaximum,
      [&flags](std::chrono::milliseconds d) {
        flags.resend_interval = d;
        return std::string();
      },
      "ListAndWatch full re-send period (default: the config's resend_interval_seconds, 30s)");
  addDurationOption(
      *app, "--health-interval", kMinimum, kMaximum,
      [&flags](std::chrono::milliseconds d) {
        flags.health_interval = d;
        return std::string();
      },
      "port state and device node re-read period (default: the config's health_poll_ms, 500ms)");
  app->add_flag("--cdi", flags.cdi, "write a CDI spec and return cdi_devices in Allocate");
  app->add_option("--cdi-dir", flags.cdi_dir, "where the CDI spec goes")->type_name("DIR");
  addNfdFeaturesOptions(*app, flags.nfd_features_file, flags.nfd_features_ttl);

  return parseFlags(*app, args, flags);
}

} // namespace kube_rdma
