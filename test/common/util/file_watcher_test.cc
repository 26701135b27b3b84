#include "common/util/file_watcher.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/kube-rdma-watch-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

// Counts callbacks and lets the test wait for a number of them (the deadline is generous; it only
// bounds a failing test).
class EventLog {
public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(what);
    cv_.notify_all();
  }
  bool waitFor(const std::string& what) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] {
      for (const auto& e : events_) {
        if (e == what) {
          return true;
        }
      }
      return false;
    });
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.clear();
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
};

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

TEST(InotifyWatcher, SeesAFileWrittenInPlaceAndReplacedByRename) {
  TempDir dir;
  EventLog log; // outlives the watcher, whose thread calls into it
  auto watcher = createInotifyWatcher();
  ASSERT_TRUE(watcher.ok()) << watcher.error().message;
  const std::string file = dir.path() + "/policy.json";
  ASSERT_TRUE((*watcher)->watchFile(file, [&] { log.add("changed"); }).ok());

  writeFile(file, "{}");
  EXPECT_TRUE(log.waitFor("changed"));

  log.clear();
  writeFile(dir.path() + "/policy.json.tmp", "{\"a\":1}");
  fs::rename(dir.path() + "/policy.json.tmp", file);
  EXPECT_TRUE(log.waitFor("changed"));
}

TEST(InotifyWatcher, SeesAConfigMapDataSymlinkSwap) {
  TempDir dir;
  // The layout the kubelet gives a ConfigMap volume: name -> ..data/name, ..data -> ..<version>.
  fs::create_directory(dir.path() + "/..v1");
  writeFile(dir.path() + "/..v1/config.json", "{}");
  fs::create_directory_symlink("..v1", dir.path() + "/..data");
  fs::create_symlink("..data/config.json", dir.path() + "/config.json");

  EventLog log; // outlives the watcher, whose thread calls into it
  auto watcher = createInotifyWatcher();
  ASSERT_TRUE(watcher.ok());
  ASSERT_TRUE((*watcher)->watchFile(dir.path() + "/config.json", [&] { log.add("changed"); }).ok());

  fs::create_directory(dir.path() + "/..v2");
  writeFile(dir.path() + "/..v2/config.json", "{\"b\":2}");
  fs::create_directory_symlink("..v2", dir.path() + "/..data_tmp");
  fs::rename(dir.path() + "/..data_tmp", dir.path() + "/..data");
  EXPECT_TRUE(log.waitFor("changed"));
}

TEST(InotifyWatcher, IgnoresOtherFilesInTheDirectory) {
  TempDir dir;
  EventLog log; // outlives the watcher, whose thread calls into it
  auto watcher = createInotifyWatcher();
  ASSERT_TRUE(watcher.ok());
  ASSERT_TRUE((*watcher)->watchFile(dir.path() + "/watched", [&] { log.add("watched"); }).ok());
  ASSERT_TRUE((*watcher)
                  ->watchDirectory(dir.path(),
                                   [&](const DirectoryEvent& e) {
                                     if (e.name == "marker") {
                                       log.add("marker");
                                     }
                                   })
                  .ok());
  writeFile(dir.path() + "/other", "x");
  writeFile(dir.path() + "/marker", "x");
  // The marker is written after `other`; once it is seen, `other`'s events were dispatched too.
  ASSERT_TRUE(log.waitFor("marker"));
  log.clear();
  writeFile(dir.path() + "/watched", "x");
  EXPECT_TRUE(log.waitFor("watched"));
}

TEST(InotifyWatcher, ReportsCreatedAndDeletedNamesInADirectory) {
  TempDir dir;
  EventLog log; // outlives the watcher, whose thread calls into it
  auto watcher = createInotifyWatcher();
  ASSERT_TRUE(watcher.ok());
  ASSERT_TRUE((*watcher)
                  ->watchDirectory(
                      dir.path(),
                      [&](const DirectoryEvent& e) {
                        log.add((e.kind == DirectoryEvent::Kind::kCreated ? "+" : "-") + e.name);
                      })
                  .ok());
  writeFile(dir.path() + "/kubelet.sock", "");
  EXPECT_TRUE(log.waitFor("+kubelet.sock"));
  fs::remove(dir.path() + "/kubelet.sock");
  EXPECT_TRUE(log.waitFor("-kubelet.sock"));
}

TEST(InotifyWatcher, RefusesAMissingDirectoryWithItsName) {
  auto watcher = createInotifyWatcher();
  ASSERT_TRUE(watcher.ok());
  const auto status = (*watcher)->watchFile("/nonexistent-kube-rdma/x.json", [] {});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("/nonexistent-kube-rdma/"), std::string::npos);
}

} // namespace
} // namespace kube_rdma
