#include "webhook/webhook_metrics.h"

namespace kube_rdma {
namespace {

constexpr MetricFamily kRequests{"rdma_webhook_requests_total",
                                 "AdmissionReview calls by outcome."};
constexpr MetricFamily kMutations{"rdma_webhook_mutations_total",
                                  "Pods changed, by kind of change."};

} // namespace

WebhookMetrics::WebhookMetrics(MetricsRegistry& registry)
    : registry_(registry),
      // A review takes tens of microseconds; the buckets resolve that and still catch stalls.
      latency_(registry.histogram(
          {"rdma_webhook_request_duration_seconds",
           "Time to answer one /mutate call, body read to reply."},
          {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1})),
      policy_generation_(registry.gauge(
          {"rdma_webhook_policy_generation", "Policies put in force since start; 0 means none."})),
      policy_reload_errors_(
          registry.counter({"rdma_webhook_policy_reload_errors_total",
                            "Policy files rejected; the last good policy kept serving."})),
      resources_never_sent_(registry.gauge(
          {"rdma_webhook_policy_resources_never_sent",
           "Resources of the policy in force that the shipped MutatingWebhookConfiguration never "
           "sends to the webhook (they do not start with rdma/)."})),
      certificate_reload_errors_(registry.counter(
          {"rdma_webhook_certificate_reload_errors_total",
           "Certificate or key files rejected; the last good pair kept serving."})),
      certificate_expiry_(registry.gauge({"rdma_webhook_certificate_expiry_seconds",
                                          "Seconds until the serving certificate expires."})),
      open_connections_(registry.gauge({"rdma_webhook_open_connections",
                                        "Connections accepted and not yet closed, busy or idle."})),
      connections_cut_(registry.counter(
          {"rdma_webhook_connections_cut_total",
           "Connections closed because no request finished within the deadline."})) {
  // Every series exists from the start, so rate() and alerts see zeros rather than gaps.
  for (const char* outcome : {"mutated", "unchanged", "skipped", "ignored", "bad_request"}) {
    requests_.emplace_back(outcome, &registry_.counter(kRequests, {{"outcome", outcome}}));
  }
  for (const char* kind : {"resources", "ipc-lock", "shm", "env", "annotations"}) {
    mutations_.emplace_back(kind, &registry_.counter(kMutations, {{"kind", kind}}));
  }
}

Counter& WebhookMetrics::seriesOf(const Series& series, const MetricFamily& family,
                                  const char* label, const std::string& value) {
  for (const auto& [known, counter] : series) {
    if (known == value) {
      return *counter;
    }
  }
  // Not one of those registered up front: the registry finds or adds it.
  return registry_.counter(family, {{label, value}});
}

void WebhookMetrics::setConnections(size_t open, uint64_t cut) {
  open_connections_.set(static_cast<double>(open));
  // The count is kept by the connection code; the counter catches up to it.
  connections_cut_.inc(static_cast<double>(cut) - connections_cut_.value());
}

void WebhookMetrics::recordReview(const ReviewOutcome& outcome,
                                  std::chrono::duration<double> elapsed) {
  seriesOf(requests_, kRequests, "outcome", outcome.outcome).inc();
  for (const std::string& kind : outcome.applied) {
    seriesOf(mutations_, kMutations, "kind", kind).inc();
  }
  latency_.observe(elapsed.count());
}

} // namespace kube_rdma
