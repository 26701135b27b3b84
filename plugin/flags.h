#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/util/log.h"
#include "common/util/result.h"
#include "common/node/verbs_discovery.h"

namespace kube_rdma {

// rdma-device-plugin's command line (DESIGN.md "Interfaces"), with the defaults a node has.
struct PluginFlags {
  std::string config_path; // empty: DESIGN.md's default pools
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  DiscoveryBackend discovery = DiscoveryBackend::kAuto;
  std::string device_plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string plugin_registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string state_dir = "/var/run/kube-rdma";
  std::string metrics_address; // empty: no metrics endpoint
  // The kubelet's PodResources socket, for kube_rdma_pod_port_info; empty: not read.
  std::string pod_resources_socket;
  // The runtime's NRI socket (docs/nri.md); empty: no NRI plugin.
  std::string nri_socket;
  std::string host_proc_root = "/proc";
  std::string node_name;
  LogFormat log_format = LogFormat::kText;
  // Every ListAndWatch stream re-sends the full list this often, so a lost update heals.
  // Unset: the config's resend_interval_seconds (30 s by default).
  std::optional<std::chrono::milliseconds> resend_interval;
  // How often port states and device nodes are re-read (sysfs attributes do not notify).
  // Unset: the config's health_poll_ms (500 ms by default).
  std::optional<std::chrono::milliseconds> health_interval;
  bool cdi = false;
  std::string cdi_dir = "/var/run/cdi";
  // Node labels for NFD's local source (docs/node-labels.md); empty: not written.
  std::string nfd_features_file;
  // The file's expiry-time is this far ahead; it is rewritten half-way.
  std::chrono::seconds nfd_features_ttl = std::chrono::minutes(10);
  // --help or --version: print this and exit 0 instead of running.
  std::string exit_message;
};

// Parses argv without argv[0] (common/util/command_line.h: "--name value" or "--name=value").
Result<PluginFlags> parsePluginFlags(const std::vector<std::string>& args);

} // namespace kube_rdma
