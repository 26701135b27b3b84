#include "kubeclient/backoff.h"

#include <algorithm>

namespace kube_rdma {

std::chrono::milliseconds backoffDelay(const BackoffPolicy& policy, int attempt) {
  double delay = static_cast<double>(policy.initial.count());
  const auto cap = static_cast<double>(policy.max.count());
  for (int i = 0; i < attempt && delay < cap; ++i) {
    delay *= policy.factor;
  }
  return std::chrono::milliseconds(static_cast<long long>(std::min(delay, cap)));
}

std::chrono::milliseconds retryDelay(const BackoffPolicy& policy, int attempt,
                                     const ApiError& error, double uniform01) {
  const std::chrono::milliseconds delay = backoffDelay(policy, attempt);
  const auto stretch = static_cast<long long>(static_cast<double>(delay.count()) * policy.jitter *
                                              std::clamp(uniform01, 0.0, 1.0));
  return std::max(delay + std::chrono::milliseconds(stretch),
                  std::chrono::duration_cast<std::chrono::milliseconds>(error.retry_after));
}

} // namespace kube_rdma
