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

} // namespace kube_rdma
