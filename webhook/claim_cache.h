#pragma once

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/util/clock.h"
#include "common/util/metrics.h"
#include "common/util/result.h"
#include "kubeclient/api_client.h"
#include "webhook/dra_claims.h"

// The webhook's reads of ResourceClaims and ResourceClaimTemplates from the API server, with a
// short-lived cache: a Job's pods share one template, so a burst of pod creations reads it once,
// also when they arrive together (one GET per object in flight; the others wait for its answer).
namespace kube_rdma {

class ClaimCache {
public:
  // Answers found are kept for `ttl`; errors are not kept (a claim created a moment later must
  // be found). At most kMaxEntries answers are kept; when full, the cache starts over. Counts its
  // reads in rdma_webhook_claim_reads_total{source="api|cache|in-flight"} of `metrics`.
  ClaimCache(ApiClient& api, ClockPtr clock, std::chrono::milliseconds ttl,
             MetricsRegistry& metrics);

  // The requests of the ResourceClaimSpec behind `source` in `ns`: the claim's spec, or the
  // template's spec.spec. Errors carry the API server's message.
  Result<std::vector<ClaimRequest>> read(const std::string& ns, const PodClaimSource& source);

  ClaimSpecLookup lookup() {
    return [this](const std::string& ns, const PodClaimSource& source) { return read(ns, source); };
  }

private:
  using Answer = Result<std::vector<ClaimRequest>>;
  struct Entry {
    std::vector<ClaimRequest> requests;
    std::chrono::steady_clock::time_point expires;
  };

  static constexpr size_t kMaxEntries = 4096;

  Answer get(const std::string& path, bool from_template);

  ApiClient& api_;
  ClockPtr clock_;
  const std::chrono::milliseconds ttl_;
  Counter& from_api_;
  Counter& from_cache_;
  Counter& joined_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;                        // by API path
  std::map<std::string, std::shared_future<Answer>> in_flight_; // by API path
};

} // namespace kube_rdma
