#include "common/util/liveness_watchdog.h"

#include <unistd.h>

#include <utility>

namespace kube_rdma {

LivenessWatchdog::LivenessWatchdog(ClockPtr clock, JudgeFn judge, std::chrono::milliseconds period,
                                   std::chrono::milliseconds grace, DeadFn on_dead)
    : clock_(std::move(clock)), judge_(std::move(judge)), period_(period), grace_(grace),
      on_dead_(std::move(on_dead)), last_alive_(clock_->now()) {
  judging_ = std::thread([this] { judgeEveryPeriod(); });
  watching_ = std::thread([this] { watch(); });
}

LivenessWatchdog::~LivenessWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  judging_.join();
  watching_.join();
}

void LivenessWatchdog::judgeEveryPeriod() {
  std::unique_lock<std::mutex> lock(mutex_);
  do {
    lock.unlock();
    // Outside the lock: the watcher must see a judgement that hangs.
    auto status = judge_();
    lock.lock();
    if (status) {
      last_alive_ = clock_->now();
      last_error_.clear();
    } else {
      last_error_ = status.error().message;
    }
  } while (!clock_->waitFor(lock, stop_, period_, [this] { return stopping_; }));
}

void LivenessWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!clock_->waitFor(lock, stop_, period_, [this] { return stopping_; })) {
    const auto silent = clock_->now() - last_alive_;
    if (silent < grace_) {
      continue;
    }
    const std::string ms =
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silent).count());
    std::string why = last_error_.empty()
                          ? "the health judgement has not returned for " + ms + " ms"
                          : "unhealthy for " + ms + " ms: " + last_error_;
    lock.unlock();
    on_dead_(why);
    return;
  }
}

LivenessWatchdog::DeadFn logAndExit(Logger& logger) {
  return [&logger](const std::string& why) {
    logger.error("not alive: exiting for the kubelet to restart the container", {{"why", why}});
    _exit(1);
  };
}

} // namespace kube_rdma
