#include "common/util/file_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace kube_rdma {
namespace {

// A ConfigMap volume publishes a new version by renaming a fresh `..data` symlink over the old
// one; the visible file names are symlinks through it and never change themselves.
constexpr const char* kConfigMapDataLink = "..data";

constexpr uint32_t kDirectoryMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                    IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

struct Watch {
  std::string file_name; // empty for a directory watch
  std::function<void()> on_file_change;
  std::function<void(const DirectoryEvent&)> on_directory_event;
};

class InotifyWatcher final : public FileWatcher {
public:
  InotifyWatcher(int inotify_fd, int stop_fd)
      : inotify_fd_(inotify_fd), stop_fd_(stop_fd), thread_([this] { run(); }) {}

  ~InotifyWatcher() override {
    const uint64_t one = 1;
    if (::write(stop_fd_, &one, sizeof(one)) < 0) {
      // Nothing else can wake the thread; closing the descriptors below still ends the poll.
    }
    thread_.join();
    ::close(inotify_fd_);
    ::close(stop_fd_);
  }

  // FileWatcher
  Status watchFile(const std::string& path, std::function<void()> on_change) override {
    const auto slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name.empty()) {
      return makeError("cannot watch '" + path + "': it names a directory, not a file");
    }
    return add(dir, Watch{name, std::move(on_change), nullptr});
  }

  Status watchDirectory(const std::string& dir,
                        std::function<void(const DirectoryEvent&)> on_event) override {
    return add(dir, Watch{"", nullptr, std::move(on_event)});
  }

private:
  Status add(const std::string& dir, Watch watch) {
    const int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), kDirectoryMask);
    if (wd < 0) {
      return makeError("cannot watch directory '" + dir + "': " + std::strerror(errno));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    watches_[wd].push_back(std::move(watch));
    return Ok{};
  }

  void run() {
    alignas(struct inotify_event) char buffer[16 * 1024];
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    while (true) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) {
          continue;
        }
        return;
      }
      if ((fds[1].revents & POLLIN) != 0) {
        return;
      }
      const ssize_t len = ::read(inotify_fd_, buffer, sizeof(buffer));
      if (len <= 0) {
        continue;
      }
      for (ssize_t offset = 0; offset < len;) {
        const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + offset);
        dispatch(*event);
        offset += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
      }
    }
  }

  void dispatch(const struct inotify_event& event) {
    const std::string name = event.len > 0 ? std::string(event.name) : std::string();
    std::vector<std::function<void()>> file_callbacks;
    std::vector<std::function<void(const DirectoryEvent&)>> dir_callbacks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = watches_.find(event.wd);
      if (it == watches_.end()) {
        return;
      }
      for (const auto& w : it->second) {
        if (w.on_file_change && (name == w.file_name || name == kConfigMapDataLink)) {
          file_callbacks.push_back(w.on_file_change);
        }
        if (w.on_directory_event && !name.empty()) {
          dir_callbacks.push_back(w.on_directory_event);
        }
      }
    }
    for (const auto& cb : file_callbacks) {
      cb();
    }
    if ((event.mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
      for (const auto& cb : dir_callbacks) {
        cb(DirectoryEvent{name, DirectoryEvent::Kind::kCreated});
      }
    } else if ((event.mask & (IN_DELETE | IN_MOVED_FROM)) != 0) {
      for (const auto& cb : dir_callbacks) {
        cb(DirectoryEvent{name, DirectoryEvent::Kind::kDeleted});
      }
    }
  }

  const int inotify_fd_;
  const int stop_fd_;
  std::mutex mutex_;
  std::map<int, std::vector<Watch>> watches_;
  std::thread thread_; // last: starts after every other member is ready
};

} // namespace

Result<FileWatcherPtr> createInotifyWatcher() {
  const int inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd < 0) {
    return makeError(std::string("inotify_init1 failed: ") + std::strerror(errno));
  }
  const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const int err = errno;
    ::close(inotify_fd);
    return makeError(std::string("eventfd failed: ") + std::strerror(err));
  }
  return FileWatcherPtr(std::make_unique<InotifyWatcher>(inotify_fd, stop_fd));
}

} // namespace kube_rdma
