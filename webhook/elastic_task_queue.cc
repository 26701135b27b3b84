#include "webhook/elastic_task_queue.h"

namespace kube_rdma {
namespace {

thread_local bool overflow_job = false;

} // namespace

ElasticTaskQueue::ElasticTaskQueue(TaskQueueLimits limits, std::shared_ptr<TaskQueueStats> stats)
    : limits_(limits), stats_(std::move(stats)) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (size_t i = 0; i < limits_.core_threads; ++i) {
    startWorker(true);
  }
  overflow_thread_ = std::thread([this] { overflow(); });
}

ElasticTaskQueue::~ElasticTaskQueue() {
  shutdown();
}

bool ElasticTaskQueue::runningOverflowJob() {
  return overflow_job;
}

void ElasticTaskQueue::startWorker(bool core) {
  workers_.emplace_front();
  const Threads::iterator self = workers_.begin();
  *self = std::thread([this, self, core] { work(self, core); });
  ++stats_->threads;
}

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mutex_);
  joinFinished(lock);
  // Counted from threads not running a job rather than threads waiting: one just started is not
  // waiting yet, but it will look at the jobs before it waits.
  if (workers_.size() - busy_ > jobs_.size()) {
    jobs_.push_back(std::move(fn));
    work_ready_.notify_one();
  } else if (workers_.size() < limits_.max_threads) {
    jobs_.push_back(std::move(fn));
    startWorker(false);
  } else {
    ++stats_->refused;
    overflow_jobs_.push_back(std::move(fn));
    overflow_ready_.notify_one();
  }
}

void ElasticTaskQueue::work(Threads::iterator self, bool core) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto has_work = [this] { return !jobs_.empty() || shutting_down_; };
    bool woken = true;
    if (core) {
      work_ready_.wait(lock, has_work);
    } else {
      woken = work_ready_.wait_for(lock, limits_.idle_timeout, has_work);
    }
    if (jobs_.empty()) {
      // Shutting down, or an extra thread idle for too long.
      if (!woken) {
        finished_.push_back(self);
      }
      break;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    ++busy_;
    stats_->busy = busy_;
    lock.unlock();
    job();
    lock.lock();
    --busy_;
    stats_->busy = busy_;
  }
  --stats_->threads;
}

void ElasticTaskQueue::overflow() {
  overflow_job = true;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    overflow_ready_.wait(lock, [this] { return !overflow_jobs_.empty() || shutting_down_; });
    if (overflow_jobs_.empty()) {
      return;
    }
    std::function<void()> job = std::move(overflow_jobs_.front());
    overflow_jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void ElasticTaskQueue::joinFinished(std::unique_lock<std::mutex>& lock) {
  Threads done;
  for (const Threads::iterator it : finished_) {
    done.splice(done.end(), workers_, it);
  }
  finished_.clear();
  if (done.empty()) {
    return;
  }
  lock.unlock();
  for (std::thread& t : done) {
    t.join();
  }
  lock.lock();
}

void ElasticTaskQueue::shutdown() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (shutting_down_) {
    return;
  }
  shutting_down_ = true;
  work_ready_.notify_all();
  overflow_ready_.notify_all();
  Threads all;
  all.splice(all.end(), workers_);
  finished_.clear();
  lock.unlock();
  for (std::thread& t : all) {
    t.join();
  }
  overflow_thread_.join();
}

} // namespace kube_rdma
