#pragma once

#include <chrono>

namespace kube_rdma {

// Bounded exponential backoff for callers that retry what isRetryable() allows: initial,
// initial×factor, ... capped at max.
struct BackoffPolicy {
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{30000};
  double factor = 2.0;
};

// The wait before retry number `attempt` (0 for the first retry).
std::chrono::milliseconds backoffDelay(const BackoffPolicy& policy, int attempt);

} // namespace kube_rdma
