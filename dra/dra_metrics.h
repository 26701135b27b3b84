#pragma once

#include <chrono>
#include <cstddef>

#include "common/util/metrics.h"

// Every metric of rdma-dra-driver (docs/dra.md "Metrics and health").
namespace kube_rdma {
namespace dra_metrics {

inline constexpr MetricFamily kPrepares{"kube_rdma_dra_prepare_claims_total",
                                        "Claims NodePrepareResources handled, by outcome."};
inline constexpr MetricFamily kUnprepares{"kube_rdma_dra_unprepare_claims_total",
                                          "Claims NodeUnprepareResources handled, by outcome."};
inline constexpr MetricFamily kPrepareSeconds{
    "kube_rdma_dra_prepare_duration_seconds",
    "Time to prepare one claim, its read from the API server included."};
inline constexpr MetricFamily kUnprepareSeconds{"kube_rdma_dra_unprepare_duration_seconds",
                                                "Time to unprepare one claim."};
inline constexpr MetricFamily kSlicePublications{
    "kube_rdma_dra_slice_publications_total",
    "Rounds that changed the node's ResourceSlices in the API, by outcome."};
inline constexpr MetricFamily kApiErrors{
    "kube_rdma_dra_api_errors_total",
    "Failed API server requests by HTTP status; code 0: no answer (connection, TLS, timeout)."};
inline constexpr MetricFamily kPodResourcesErrors{
    "kube_rdma_dra_pod_resources_errors_total",
    "Scrapes whose PodResources List failed (kube_rdma_pod_port_info left out)."};
inline constexpr MetricFamily kPreparedClaims{"kube_rdma_dra_prepared_claims",
                                              "Claims prepared on this node and not unprepared."};

} // namespace dra_metrics

// rdma-dra-driver's series in a registry. Thread-safe (the registry's series are).
class DraMetrics {
public:
  explicit DraMetrics(MetricsRegistry& registry);

  void recordPrepare(bool ok, std::chrono::duration<double> elapsed);
  void recordUnprepare(bool ok, std::chrono::duration<double> elapsed);
  // A round that created, updated or deleted slices, or failed.
  void recordPublication(bool ok);
  // `code` is the HTTP status, 0 when no answer came.
  void recordApiError(int code);
  void setPreparedClaims(size_t count);
  void recordPodResourcesError();

private:
  MetricsRegistry& registry_;
  Counter& prepared_ok_;
  Counter& prepare_failed_;
  Counter& unprepared_ok_;
  Counter& unprepare_failed_;
  Histogram& prepare_seconds_;
  Histogram& unprepare_seconds_;
  Counter& published_ok_;
  Counter& publish_failed_;
  Gauge& prepared_claims_;
  Counter& pod_resources_errors_;
};

} // namespace kube_rdma
