#include "common/liveness_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

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

TEST(LivenessWatchdog, AJudgementThatKeepsFailingIsDeathWithItsReason) {
  Verdict verdict;
  LivenessWatchdog watchdog(
      [] { return Result<std::string>(makeError("pool rdma/hca is not serving")); },
      milliseconds(1), milliseconds(20), [&verdict](const std::string& why) { verdict(why); });
  const auto why = verdict.waitForDeath();
  ASSERT_TRUE(why);
  EXPECT_TRUE(why->starts_with("unhealthy for ")) << *why;
  EXPECT_TRUE(why->ends_with(" ms: pool rdma/hca is not serving")) << *why;
}

TEST(LivenessWatchdog, AJudgementThatNeverReturnsIsDeath) {
  Verdict verdict;
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  {
    LivenessWatchdog watchdog(
        [&]() -> Result<std::string> {
          std::unique_lock<std::mutex> lock(mutex);
          released.wait(lock, [&] { return release; }); // a deadlocked daemon
          return std::string("ok\n");
        },
        milliseconds(1), milliseconds(20), [&verdict](const std::string& why) { verdict(why); });
    const auto why = verdict.waitForDeath();
    ASSERT_TRUE(why);
    EXPECT_TRUE(why->starts_with("the health judgement has not returned for ")) << *why;
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
  std::atomic<int> judged = 0;
  {
    // Every other judgement fails: each failure is followed by an ok well within the grace.
    LivenessWatchdog watchdog(
        [&judged]() -> Result<std::string> {
          if (++judged % 2 == 0) {
            return makeError("registration refused");
          }
          return std::string("ok\n");
        },
        milliseconds(1), std::chrono::minutes(1),
        [&verdict](const std::string& why) { verdict(why); });
    while (judged < 50) {
      std::this_thread::yield();
    }
  }
  EXPECT_EQ(verdict.calls(), 0);
}

} // namespace
} // namespace kube_rdma
