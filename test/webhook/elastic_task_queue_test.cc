#include "webhook/elastic_task_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "test/webhook/eventually.h"

namespace kube_rdma {
namespace {

using namespace std::chrono_literals;

// Jobs that hold their thread until released, like connections held open.
class Gate {
public:
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Until `n` jobs are waiting; the bound only ends a broken test.
  bool waitForWaiting(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 60s, [&] { return waiting_ >= n; });
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(ElasticTaskQueue, EveryHeldJobGetsAThreadBeyondTheCore) {
  auto stats = std::make_shared<TaskQueueStats>();
  Gate gate; // before the queue: its threads may still be leaving wait() when the test ends
  ElasticTaskQueue queue({2, 20, 60s}, stats);
  for (int i = 0; i < 10; ++i) {
    queue.enqueue([&] { gate.wait(); });
  }
  // Ten jobs run at once on a core of two: none waits behind another.
  EXPECT_TRUE(gate.waitForWaiting(10));
  EXPECT_EQ(stats->threads, 10u);
  EXPECT_EQ(stats->busy, 10u);
  EXPECT_EQ(stats->refused, 0u);
  gate.open();
  queue.shutdown();
  EXPECT_EQ(stats->threads, 0u);
}

TEST(ElasticTaskQueue, JobsBeyondTheCapRunAtOnceMarkedAsOverflow) {
  auto stats = std::make_shared<TaskQueueStats>();
  Gate gate;
  std::atomic<int> marked_in_pool{0};
  std::atomic<int> overflow{0};
  ElasticTaskQueue queue({1, 3, 60s}, stats);
  for (int i = 0; i < 3; ++i) {
    queue.enqueue([&] {
      marked_in_pool += ElasticTaskQueue::runningOverflowJob() ? 1 : 0;
      gate.wait();
    });
  }
  ASSERT_TRUE(gate.waitForWaiting(3));
  // The cap is reached and every thread is held: the next jobs still run, without waiting for
  // the held ones, on the overflow thread.
  for (int i = 0; i < 5; ++i) {
    queue.enqueue([&] { overflow += ElasticTaskQueue::runningOverflowJob() ? 1 : 0; });
  }
  EXPECT_TRUE(eventually([&] { return overflow == 5; }));
  EXPECT_EQ(stats->refused, 5u);
  EXPECT_EQ(stats->threads, 3u);
  EXPECT_EQ(marked_in_pool, 0);
  EXPECT_FALSE(ElasticTaskQueue::runningOverflowJob());
  gate.open();
}

TEST(ElasticTaskQueue, ThreadsAboveTheCoreLeaveWhenIdleAndComeBackWhenNeeded) {
  auto stats = std::make_shared<TaskQueueStats>();
  Gate gate;
  Gate second;
  ElasticTaskQueue queue({2, 8, 50ms}, stats);
  for (int i = 0; i < 8; ++i) {
    queue.enqueue([&] { gate.wait(); });
  }
  ASSERT_TRUE(gate.waitForWaiting(8));
  EXPECT_EQ(stats->threads, 8u);
  gate.open();
  EXPECT_TRUE(eventually([&] { return stats->threads == 2u; }));
  // Joined threads free their slots: the cap counts live threads only.
  for (int i = 0; i < 8; ++i) {
    queue.enqueue([&] { second.wait(); });
  }
  EXPECT_TRUE(second.waitForWaiting(8));
  EXPECT_EQ(stats->refused, 0u);
  second.open();
}

TEST(ElasticTaskQueue, ShutdownRunsEveryJobGivenAndJoins) {
  auto stats = std::make_shared<TaskQueueStats>();
  std::atomic<int> ran{0};
  {
    Gate gate;
    ElasticTaskQueue queue({1, 1, 60s}, stats);
    queue.enqueue([&] {
      gate.wait();
      ++ran;
    });
    ASSERT_TRUE(gate.waitForWaiting(1));
    for (int i = 0; i < 4; ++i) {
      queue.enqueue([&] { ++ran; });
    }
    gate.open();
    queue.shutdown();
    EXPECT_EQ(ran, 5);
  }
  EXPECT_EQ(stats->threads, 0u);
}

} // namespace
} // namespace kube_rdma
