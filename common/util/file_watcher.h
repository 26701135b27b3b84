#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/util/result.h"

namespace kube_rdma {

struct DirectoryEvent {
  enum class Kind { kCreated, kDeleted };
  std::string name; // file name inside the watched directory
  Kind kind;
};

// Watches files and directories and calls back when they change. Callbacks run on the watcher's
// own thread, may be called more than once for one logical change (callers reload idempotently),
// and must not block for long. Destroy the watcher (which joins its thread) before anything its
// callbacks use.
class FileWatcher {
public:
  virtual ~FileWatcher() = default;

  // Calls on_change whenever the file at `path` may have new content: written in place, replaced
  // by a rename, created, deleted, or swapped through a ConfigMap volume's `..data` symlink.
  // The parent directory must exist; the file need not.
  virtual Status watchFile(const std::string& path, std::function<void()> on_change) = 0;

  // Calls on_event for each name created in (or moved into) and deleted from (or moved out of)
  // `dir`.
  virtual Status watchDirectory(const std::string& dir,
                                std::function<void(const DirectoryEvent&)> on_event) = 0;
};
using FileWatcherPtr = std::unique_ptr<FileWatcher>;

// The Linux implementation: one inotify descriptor and one thread, stopped by the destructor.
Result<FileWatcherPtr> createInotifyWatcher();

} // namespace kube_rdma
