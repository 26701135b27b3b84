#include "common/util/liveness_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "test/fakes/fake_clock.h"

namespace kube_rdma {
namespace {

using std::chrono::milliseconds;

// What on_dead was called with, waited for without a timing assertion.
class Verdict {
public:
  void operator()(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls_;
    why_ = why;
    changed_.notify_all();
  }
  std::optional<std::string> waitForDeath() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(60), [this] { return why_.has_value(); });
    return why_;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<std::string> why_;
  int calls_ = 0;
};

// The kubelet probe's numbers: asked every 10 s, dead after 30 s without an ok.
constexpr milliseconds kPeriod = std::chrono::seconds(10);
constexpr milliseconds kGrace = std::chrono::seconds(30);

TEST(LivenessWatchdog, AJudgementThatKeepsFailingIsDeathWithItsReasonAfterTheGrace) {
  Verdict verdict;
  const auto clock = std::make_shared<FakeClock>();
  LivenessWatchdog watchdog(
      clock, [] { return Result<std::string>(makeError("pool rdma/hca is not serving")); }, kPeriod,
      kGrace, [&verdict](const std::string& why) { verdict(why); });
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(clock->awaitParked(2)); // both threads wait for the next period
    clock->advance(kPeriod);
  }
  ASSERT_TRUE(clock->awaitParked(2));
  EXPECT_EQ(verdict.calls(), 0); // 20 s: within the grace
  clock->advance(kPeriod);
  EXPECT_EQ(verdict.waitForDeath(), "unhealthy for 30000 ms: pool rdma/hca is not serving");
}

TEST(LivenessWatchdog, AJudgementThatNeverReturnsIsDeath) {
  Verdict verdict;
  const auto clock = std::make_shared<FakeClock>();
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  {
    LivenessWatchdog watchdog(
        clock,
        [&]() -> Result<std::string> {
          std::unique_lock<std::mutex> lock(mutex);
          released.wait(lock, [&] { return release; }); // a deadlocked daemon
          return std::string("ok\n");
        },
        kPeriod, kGrace, [&verdict](const std::string& why) { verdict(why); });
    for (int round = 0; round < 3; ++round) {
      ASSERT_TRUE(clock->awaitParked(1)); // the watching thread; the judging one is stuck
      clock->advance(kPeriod);
    }
    EXPECT_EQ(verdict.waitForDeath(), "the health judgement has not returned for 30000 ms");
    {
      std::lock_guard<std::mutex> lock(mutex);
      release = true;
    }
    released.notify_all();
  }
  EXPECT_EQ(verdict.calls(), 1);
}

TEST(LivenessWatchdog, FailuresShorterThanTheGraceAreNotDeath) {
  Verdict verdict;
  const auto clock = std::make_shared<FakeClock>();
  std::atomic<int> judged = 0;
  {
    // Every other judgement fails: 20 s at most without an ok, under the grace of 30.
    LivenessWatchdog watchdog(
        clock,
        [&judged]() -> Result<std::string> {
          if (++judged % 2 == 0) {
            return makeError("registration refused");
          }
          return std::string("ok\n");
        },
        kPeriod, kGrace, [&verdict](const std::string& why) { verdict(why); });
    for (int round = 0; round < 20; ++round) {
      // A watchdog that took these failures for death would have stopped watching.
      ASSERT_TRUE(clock->awaitParked(2)) << "round " << round;
      clock->advance(kPeriod);
    }
    ASSERT_TRUE(clock->awaitParked(2));
    EXPECT_EQ(judged.load(), 21); // once at the start, once per period
  }
  EXPECT_EQ(verdict.calls(), 0);
}

} // namespace
} // namespace kube_rdma
