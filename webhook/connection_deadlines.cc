#include "webhook/connection_deadlines.h"

namespace kube_rdma {

void ConnectionDeadlines::opened(Id id, int fd, TimePoint now) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.try_emplace(id, Entry{fd, now});
}

void ConnectionDeadlines::answered(Id id, TimePoint now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(id); it != entries_.end()) {
    it->second.since = now;
  }
}

void ConnectionDeadlines::closed(Id id) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(id);
}

size_t ConnectionDeadlines::cutExpired(TimePoint now, const std::function<void(int fd)>& cut) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t count = 0;
  for (auto& [id, entry] : entries_) {
    if (!entry.cut && now - entry.since > limit_) {
      entry.cut = true;
      cut(entry.fd);
      ++count;
    }
  }
  return count;
}

size_t ConnectionDeadlines::tracked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

} // namespace kube_rdma
