#pragma once

#include <chrono>
#include <cstdint>

#include "common/metrics.h"
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
  void certificateReloadFailed() { certificate_reload_errors_.inc(); }
  // Seconds until the serving certificate expires (negative once expired); set at each scrape.
  void setCertificateExpiry(double seconds) { certificate_expiry_.set(seconds); }

private:
  MetricsRegistry& registry_;
  Histogram& latency_;
  Gauge& policy_generation_;
  Counter& policy_reload_errors_;
  Counter& certificate_reload_errors_;
  Gauge& certificate_expiry_;
};

} // namespace kube_rdma
