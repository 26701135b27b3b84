#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace kube_rdma {

// Time source, injected so tests can drive time without sleeping. A thread that waits for time to
// pass waits through waitUntil/waitFor, so a test's fake clock can run it to any instant and see
// it parked again, instead of sleeping to prove that nothing happened.
class Clock {
public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  virtual std::chrono::system_clock::time_point wallNow() const = 0;
  // Blocks on `wake`, `lock` held on entry and on return, until `done()` holds or this clock
  // reaches `deadline`; returns done(). Whoever makes done() true notifies `wake`.
  virtual bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& wake,
                         TimePoint deadline, const std::function<bool()>& done) const = 0;
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& wake,
               std::chrono::steady_clock::duration timeout,
               const std::function<bool()>& done) const {
    return waitUntil(lock, wake, now() + timeout, done);
  }
};
using ClockPtr = std::shared_ptr<Clock>;

class RealClock final : public Clock {
public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point wallNow() const override {
    return std::chrono::system_clock::now();
  }
  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& wake,
                 TimePoint deadline, const std::function<bool()>& done) const override {
    return wake.wait_until(lock, deadline, done);
  }
};

} // namespace kube_rdma
