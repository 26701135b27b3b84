#pragma once

#include <chrono>

#include "kubeclient/api_error.h"

namespace kube_rdma {

// Bounded exponential backoff for callers that retry failed requests: initial,
// initial×factor, ... capped at max, each stretched by a random part of up to `jitter` of itself
// so that a fleet that failed together does not come back together.
struct BackoffPolicy {
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{30000};
  double factor = 2.0;
  double jitter = 0.0; // 1.0: anywhere between the delay and twice it
};

// The wait before retry number `attempt` (0 for the first retry), without the jitter.
std::chrono::milliseconds backoffDelay(const BackoffPolicy& policy, int attempt);

// The wait before retrying after `error`, the `attempt`-th failure in a row: the backoff delay
// stretched by `uniform01` (a random number in [0, 1)) times the policy's jitter, and never
// shorter than the Retry-After the server asked for.
std::chrono::milliseconds retryDelay(const BackoffPolicy& policy, int attempt,
                                     const ApiError& error, double uniform01);

} // namespace kube_rdma
