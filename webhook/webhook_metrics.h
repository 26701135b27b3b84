#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/util/metrics.h"
#include "webhook/review.h"

// rdma-webhook's Prometheus series, all prefixed rdma_webhook_.
namespace kube_rdma {

class WebhookMetrics {
public:
  explicit WebhookMetrics(MetricsRegistry& registry);

  // One /mutate call: its outcome, the kinds of change made, and how long it took.
  void recordReview(const ReviewOutcome& outcome, std::chrono::duration<double> elapsed);
  void setPolicyGeneration(uint64_t generation) {
    policy_generation_.set(static_cast<double>(generation));
  }
  void policyReloadFailed() { policy_reload_errors_.inc(); }
  // Resources of the policy in force that the shipped MutatingWebhookConfiguration never sends.
  void setResourcesNeverSent(size_t count) {
    resources_never_sent_.set(static_cast<double>(count));
  }
  void certificateReloadFailed() { certificate_reload_errors_.inc(); }
  // Seconds until the serving certificate expires (negative once expired); set at each scrape.
  void setCertificateExpiry(double seconds) { certificate_expiry_.set(seconds); }
  // Connections open now, and cut since start because no request finished in time.
  void setConnections(size_t open, uint64_t cut);

private:
  // The series of a labelled family, found once: a registry lookup per review built a label map
  // and took the registry's one lock, on every connection thread.
  using Series = std::vector<std::pair<std::string, Counter*>>;
  Counter& seriesOf(const Series& series, const MetricFamily& family, const char* label,
                    const std::string& value);

  MetricsRegistry& registry_;
  Series requests_;
  Series mutations_;
  Histogram& latency_;
  Gauge& policy_generation_;
  Counter& policy_reload_errors_;
  Gauge& resources_never_sent_;
  Counter& certificate_reload_errors_;
  Gauge& certificate_expiry_;
  Gauge& open_connections_;
  Counter& connections_cut_;
};

} // namespace kube_rdma
