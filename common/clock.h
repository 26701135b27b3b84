#pragma once

#include <chrono>
#include <memory>

namespace kube_rdma {

// Time source, injected so tests can drive time without sleeping.
class Clock {
public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
  virtual std::chrono::system_clock::time_point wallNow() const = 0;
};
using ClockPtr = std::shared_ptr<Clock>;

class RealClock final : public Clock {
public:
  std::chrono::steady_clock::time_point now() const override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point wallNow() const override {
    return std::chrono::system_clock::now();
  }
};

} // namespace kube_rdma
