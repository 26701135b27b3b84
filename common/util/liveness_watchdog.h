#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/util/clock.h"
#include "common/util/log.h"
#include "common/util/result.h"

namespace kube_rdma {

// A daemon's liveness, judged by the daemon itself: what its /healthz answers, asked every
// `period`; when no answer has been "ok" for `grace` (the judgement failed or has not returned),
// `on_dead` is called once with why. The daemons log it and exit, and the kubelet restarts them,
// as a liveness probe would have; unlike a probe on the metrics port, another program holding
// that port is not taken for a dead daemon.
class LivenessWatchdog {
public:
  using JudgeFn = std::function<Result<std::string>()>;
  using DeadFn = std::function<void(const std::string& why)>;

  LivenessWatchdog(ClockPtr clock, JudgeFn judge, std::chrono::milliseconds period,
                   std::chrono::milliseconds grace, DeadFn on_dead);
  // Joins both threads: a judgement that never returns keeps it waiting.
  ~LivenessWatchdog();
  LivenessWatchdog(const LivenessWatchdog&) = delete;
  LivenessWatchdog& operator=(const LivenessWatchdog&) = delete;

private:
  void judgeEveryPeriod();
  void watch();

  const ClockPtr clock_;
  const JudgeFn judge_;
  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds grace_;
  const DeadFn on_dead_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;       // guarded by mutex_
  Clock::TimePoint last_alive_; // guarded by mutex_
  std::string last_error_;      // guarded by mutex_; empty while ok
  std::thread judging_;
  std::thread watching_;
};

// The kubelet liveness probe this stands for: asked every 10 s, dead after 30 s without an ok.
inline constexpr std::chrono::milliseconds kLivenessPeriod{10'000};
inline constexpr std::chrono::milliseconds kLivenessGrace{30'000};

// The daemons' on_dead: logs why and exits at once with 1, running no destructor that could wait
// on what is stuck; the kubelet restarts the container.
LivenessWatchdog::DeadFn logAndExit(Logger& logger);

} // namespace kube_rdma
