#include "dra/dra_metrics.h"

#include <string>
#include <vector>

namespace kube_rdma {
namespace {

// A prepare takes about a millisecond (BENCHMARKS.md "DRA"); the buckets resolve that and still
// catch an API server that stalls for seconds.
const std::vector<double> kLatencyBounds{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
                                         0.05,   0.1,   0.25,  0.5,   1,    5};

const char* outcomeLabel(bool ok) {
  return ok ? "ok" : "error";
}

} // namespace

// Every series but the API errors exists from the start, so rate() and alerts see zeros rather
// than gaps.
DraMetrics::DraMetrics(MetricsRegistry& registry)
    : registry_(registry),
      prepared_ok_(registry.counter(dra_metrics::kPrepares, {{"outcome", outcomeLabel(true)}})),
      prepare_failed_(registry.counter(dra_metrics::kPrepares, {{"outcome", outcomeLabel(false)}})),
      unprepared_ok_(registry.counter(dra_metrics::kUnprepares, {{"outcome", outcomeLabel(true)}})),
      unprepare_failed_(
          registry.counter(dra_metrics::kUnprepares, {{"outcome", outcomeLabel(false)}})),
      prepare_seconds_(registry.histogram(dra_metrics::kPrepareSeconds, kLatencyBounds)),
      unprepare_seconds_(registry.histogram(dra_metrics::kUnprepareSeconds, kLatencyBounds)),
      published_ok_(
          registry.counter(dra_metrics::kSlicePublications, {{"outcome", outcomeLabel(true)}})),
      publish_failed_(
          registry.counter(dra_metrics::kSlicePublications, {{"outcome", outcomeLabel(false)}})),
      prepared_claims_(registry.gauge(dra_metrics::kPreparedClaims)),
      pod_resources_errors_(registry.counter(dra_metrics::kPodResourcesErrors)) {}

void DraMetrics::recordPrepare(bool ok, std::chrono::duration<double> elapsed) {
  (ok ? prepared_ok_ : prepare_failed_).inc();
  prepare_seconds_.observe(elapsed.count());
}

void DraMetrics::recordUnprepare(bool ok, std::chrono::duration<double> elapsed) {
  (ok ? unprepared_ok_ : unprepare_failed_).inc();
  unprepare_seconds_.observe(elapsed.count());
}

void DraMetrics::recordPublication(bool ok) {
  (ok ? published_ok_ : publish_failed_).inc();
}

void DraMetrics::recordApiError(int code) {
  registry_.counter(dra_metrics::kApiErrors, {{"code", std::to_string(code)}}).inc();
}

void DraMetrics::recordPodResourcesError() {
  pod_resources_errors_.inc();
}

void DraMetrics::setPreparedClaims(size_t count) {
  prepared_claims_.set(static_cast<double>(count));
}

} // namespace kube_rdma
