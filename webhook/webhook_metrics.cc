#include "webhook/webhook_metrics.h"

namespace kube_rdma {
namespace {

constexpr const char* kRequests = "rdma_webhook_requests_total";
constexpr const char* kRequestsHelp = "AdmissionReview calls by outcome.";
constexpr const char* kMutations = "rdma_webhook_mutations_total";
constexpr const char* kMutationsHelp = "Pods changed, by kind of change.";

} // namespace

WebhookMetrics::WebhookMetrics(MetricsRegistry& registry)
    : registry_(registry),
      // A review takes tens of microseconds; the buckets resolve that and still catch stalls.
      latency_(registry.histogram(
          "rdma_webhook_request_duration_seconds",
          "Time to answer one /mutate call, body read to reply.",
          {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1})),
      policy_generation_(registry.gauge("rdma_webhook_policy_generation",
                                        "Policies put in force since start; 0 means none.")),
      policy_reload_errors_(
          registry.counter("rdma_webhook_policy_reload_errors_total",
                           "Policy files rejected; the last good policy kept serving.")),
      certificate_reload_errors_(
          registry.counter("rdma_webhook_certificate_reload_errors_total",
                           "Certificate or key files rejected; the last good pair kept serving.")),
      certificate_expiry_(registry.gauge("rdma_webhook_certificate_expiry_seconds",
                                         "Seconds until the serving certificate expires.")) {
  // Every series exists from the start, so rate() and alerts see zeros rather than gaps.
  for (const char* outcome : {"mutated", "unchanged", "skipped", "ignored", "bad_request"}) {
    registry_.counter(kRequests, kRequestsHelp, {{"outcome", outcome}});
  }
  for (const char* kind : {"resources", "ipc-lock", "shm", "env", "annotations"}) {
    registry_.counter(kMutations, kMutationsHelp, {{"kind", kind}});
  }
}

void WebhookMetrics::recordReview(const ReviewOutcome& outcome,
                                  std::chrono::duration<double> elapsed) {
  registry_.counter(kRequests, kRequestsHelp, {{"outcome", outcome.outcome}}).inc();
  for (const std::string& kind : outcome.applied) {
    registry_.counter(kMutations, kMutationsHelp, {{"kind", kind}}).inc();
  }
  latency_.observe(elapsed.count());
}

} // namespace kube_rdma
