#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "common/util/clock.h"
#include "common/util/result.h"
#include "kubeclient/kubeconfig.h"

namespace kube_rdma {

// The bearer token to send: a fixed one, or the content of a file that the kubelet rewrites as it
// rotates the service-account token (about hourly, valid for longer). The file is read again once
// the cached value is a minute old (client-go's rule) or after the server said 401.
class BearerToken {
public:
  BearerToken(std::string fixed_token, std::string token_file, ReadFile read_file, ClockPtr clock);

  // The token for the next request; "" when none is configured. Fails only when the file has
  // never been read; later read failures keep the last good token (the old one is still valid
  // for a while after the kubelet writes a new one).
  Result<std::string> current();
  // The server refused the token: read the file again before the next request.
  void expire();
  bool fromFile() const { return !token_file_.empty(); }

private:
  const std::string fixed_token_;
  const std::string token_file_;
  const ReadFile read_file_;
  const ClockPtr clock_;
  std::mutex mutex_;
  std::string cached_;
  bool have_cached_ = false;
  std::chrono::steady_clock::time_point read_at_;
};

} // namespace kube_rdma
