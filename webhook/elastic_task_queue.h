#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

// cpp-httplib 0.11.4 runs each accepted connection as one job for its whole keep-alive life, and
// its ThreadPool queues jobs without bound behind a fixed set of threads: 1,000 held connections
// starve every new one. This queue gives every job a thread at once, growing from `core_threads`
// to `max_threads`; threads above the core exit after `idle_timeout` without work. A job that
// finds every thread busy is not queued: it runs on one overflow thread that is marked
// (runningOverflowJob()), and the TLS layer ends such a connection as its handshake starts, so it
// is refused in microseconds instead of waiting behind connections that may never finish.
namespace kube_rdma {

struct TaskQueueLimits {
  size_t core_threads = 64;
  size_t max_threads = 1024;
  std::chrono::milliseconds idle_timeout{10000};
};

// Read by /metrics while the server runs; shared because httplib owns and destroys the queue.
struct TaskQueueStats {
  std::atomic<size_t> threads{0};
  std::atomic<size_t> busy{0};
  std::atomic<uint64_t> refused{0};
};

class ElasticTaskQueue final : public httplib::TaskQueue {
public:
  ElasticTaskQueue(TaskQueueLimits limits, std::shared_ptr<TaskQueueStats> stats);
  ~ElasticTaskQueue() override;
  ElasticTaskQueue(const ElasticTaskQueue&) = delete;
  ElasticTaskQueue& operator=(const ElasticTaskQueue&) = delete;

  // httplib::TaskQueue
  void enqueue(std::function<void()> fn) override;
  // Runs every job already given, then joins all threads.
  void shutdown() override;

  // True while the calling thread runs a job that found no free thread: end it at once.
  static bool runningOverflowJob();

private:
  using Threads = std::list<std::thread>;

  void startWorker(bool core);
  void work(Threads::iterator self, bool core);
  void overflow();
  void joinFinished(std::unique_lock<std::mutex>& lock);

  const TaskQueueLimits limits_;
  std::shared_ptr<TaskQueueStats> stats_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable overflow_ready_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::function<void()>> overflow_jobs_;
  Threads workers_;
  // Workers that left on idle and wait to be joined.
  std::vector<Threads::iterator> finished_;
  size_t busy_ = 0;
  bool shutting_down_ = false;
  std::thread overflow_thread_;
};

} // namespace kube_rdma
