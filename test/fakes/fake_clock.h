#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "common/util/clock.h"

namespace kube_rdma {

// A clock that moves only when the test says so. Threads waiting through it are "parked" until
// advance() passes their deadline; awaitParked() tells the test when they are all waiting again,
// so "nothing happened in the meantime" is proven by parked threads, not by a sleep.
class FakeClock final : public Clock {
public:
  FakeClock() = default;
  // A wall clock starting at `wall` (the steady clock starts at 1 h, as by default).
  explicit FakeClock(std::chrono::system_clock::time_point wall)
      : wall_offset_(wall.time_since_epoch() - now_.time_since_epoch()) {}

  TimePoint now() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return now_;
  }
  std::chrono::system_clock::time_point wallNow() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(now_.time_since_epoch() +
                                                                        wall_offset_));
  }
  void advance(std::chrono::steady_clock::duration by) {
    std::lock_guard<std::mutex> lock(mutex_);
    now_ += by;
  }

  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& wake,
                 TimePoint deadline, const std::function<bool()>& done) const override {
    const auto id = park(deadline);
    while (!done()) {
      if (now() >= deadline) {
        unpark(id);
        return false;
      }
      // Real time, briefly: advance() does not know the waiter's condition variable.
      wake.wait_for(lock, std::chrono::milliseconds(1));
    }
    unpark(id);
    return true;
  }

  // Waits (in real time, at most a minute) until `threads` threads wait through this clock for a
  // deadline still ahead of it. False when they did not.
  bool awaitParked(size_t threads) {
    std::unique_lock<std::mutex> lock(mutex_);
    return parked_changed_.wait_for(lock, std::chrono::minutes(1), [&] {
      return static_cast<size_t>(std::ranges::count_if(
                 parked_, [&](const auto& entry) { return entry.second > now_; })) >= threads;
    });
  }

  // How far ahead the nearest deadline a thread waits for lies; nullopt when none is ahead.
  std::optional<std::chrono::steady_clock::duration> soonestWait() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<std::chrono::steady_clock::duration> soonest;
    for (const auto& [id, deadline] : parked_) {
      if (deadline > now_ && (!soonest || deadline - now_ < *soonest)) {
        soonest = deadline - now_;
      }
    }
    return soonest;
  }

private:
  uint64_t park(TimePoint deadline) const {
    std::lock_guard<std::mutex> lock(mutex_);
    parked_[++next_id_] = deadline;
    parked_changed_.notify_all();
    return next_id_;
  }
  void unpark(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    parked_.erase(id);
    parked_changed_.notify_all();
  }

  mutable std::mutex mutex_;
  mutable std::condition_variable parked_changed_;
  TimePoint now_{std::chrono::hours(1)};
  std::chrono::steady_clock::duration wall_offset_{};
  mutable std::map<uint64_t, TimePoint> parked_; // by waiter
  mutable uint64_t next_id_ = 0;
};

} // namespace kube_rdma
