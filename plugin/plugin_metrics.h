#pragma once

#include "common/util/metrics.h"

// Every metric of rdma-device-plugin (docs/plugin.md "Metrics and health").
namespace kube_rdma::plugin_metrics {

inline constexpr MetricFamily kDevices{"kube_rdma_plugin_devices",
                                       "Devices advertised per pool by health."};
inline constexpr MetricFamily kAllocations{"kube_rdma_plugin_allocations_total",
                                           "Allocate answers by outcome."};
inline constexpr MetricFamily kRegistrations{"kube_rdma_plugin_registrations_total",
                                             "Register calls to the kubelet."};
inline constexpr MetricFamily kConfigReloads{"kube_rdma_plugin_config_reloads_total",
                                             "Config reloads by outcome."};
inline constexpr MetricFamily kListAndWatchSends{"kube_rdma_plugin_list_and_watch_sends_total",
                                                 "Device lists sent to the kubelet."};
inline constexpr MetricFamily kPodResourcesErrors{
    "kube_rdma_plugin_pod_resources_errors_total",
    "PodResources List calls that failed (a scrape's kube_rdma_pod_port_info or a round of the "
    "unused-RDMA check left out)."};
// The port counters, one family per counter file: usage/port_counters.h; pods granted RDMA and
// not using it: usage/unused_rdma.h; the ports each container holds: plugin/pod_ports.h.

} // namespace kube_rdma::plugin_metrics
