#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>

// Which connections have gone too long without finishing a request. cpp-httplib 0.11.4 times
// out each recv on its own, so a client sending a byte a second is never cut; this is the
// deadline for a request as a whole (Go's ReadHeaderTimeout, for the whole request). Pure
// bookkeeping, keyed by an opaque connection identity (the SSL*), driven by the caller's clock.
namespace kube_rdma {

class ConnectionDeadlines {
public:
  using Id = const void*;
  using TimePoint = std::chrono::steady_clock::time_point;

  // A connection may go `limit` without finishing a request: from its handshake start to its
  // first answer, and from each answer to the next.
  explicit ConnectionDeadlines(std::chrono::milliseconds limit) : limit_(limit) {}

  // The handshake of a new connection on socket `fd` started. A known id is left as it is.
  void opened(Id id, int fd, TimePoint now);
  // A request on `id` was answered: its time starts again.
  void answered(Id id, TimePoint now);
  // The connection is gone (its socket is about to be closed): forget it.
  void closed(Id id);
  // Calls `cut(fd)` once for each connection past its limit at `now` and returns how many.
  // `cut` runs under the lock closed() takes, so the socket cannot have been closed, and its
  // number reused by another connection, in between.
  size_t cutExpired(TimePoint now, const std::function<void(int fd)>& cut);
  size_t tracked() const;

private:
  struct Entry {
    int fd;
    TimePoint since;
    bool cut = false;
  };

  const std::chrono::milliseconds limit_;
  mutable std::mutex mutex_;
  std::unordered_map<Id, Entry> entries_;
};

} // namespace kube_rdma
