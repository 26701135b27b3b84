#pragma once

#include <chrono>
#include <mutex>

#include "common/clock.h"

namespace kube_rdma {

// A clock that moves only when the test says so.
class FakeClock final : public Clock {
public:
  std::chrono::steady_clock::time_point now() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return now_;
  }
  std::chrono::system_clock::time_point wallNow() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::chrono::system_clock::time_point(now_.time_since_epoch());
  }
  void advance(std::chrono::steady_clock::duration by) {
    std::lock_guard<std::mutex> lock(mutex_);
    now_ += by;
  }

private:
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
};

} // namespace kube_rdma
