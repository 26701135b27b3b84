#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/util/log.h"
#include "common/util/result.h"

namespace kube_rdma {

// rdma-dra-driver's command line (docs/dra.md), with the defaults a node has.
struct DraFlags {
  std::string node_name; // required: --node-name or the NODE_NAME variable
  std::string config_path;
  std::string kubeconfig; // empty: the pod's service account
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string plugin_registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string plugin_dir = "/var/lib/kubelet/plugins/rdma.kube-rdma.io";
  std::string cdi_dir = "/var/run/cdi";
  std::string state_dir = "/var/run/kube-rdma/dra";
  std::string metrics_address; // empty: no /metrics and /healthz
  // The kubelet's PodResources socket, for kube_rdma_pod_port_info; empty: not read.
  std::string pod_resources_socket;
  // The runtime's NRI socket (docs/nri.md); empty: no NRI plugin.
  std::string nri_socket;
  std::string host_proc_root = "/proc";
  // /healthz fails when the kubelet has not registered the driver, or no ResourceSlice round has
  // succeeded, for this long.
  std::chrono::milliseconds health_timeout = std::chrono::minutes(1);
  // Node labels for NFD's local source (docs/node-labels.md); empty: not written.
  std::string nfd_features_file;
  // The file's expiry-time is this far ahead; it is rewritten half-way.
  std::chrono::seconds nfd_features_ttl = std::chrono::minutes(10);
  // Ports of shared pools allocatable to many claims at once (docs/dra.md "Shared ports").
  bool share_ports = false;
  LogFormat log_format = LogFormat::kText;
  // --help or --version: print this and exit 0 instead of running.
  std::string exit_message;
};

// Parses argv without argv[0]. `node_name_env` is the NODE_NAME variable (the DaemonSet sets it
// from spec.nodeName); --node-name wins over it. A missing node name is an error.
Result<DraFlags> parseDraFlags(const std::vector<std::string>& args,
                               const std::string& node_name_env);

} // namespace kube_rdma
