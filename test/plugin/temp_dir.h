#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kube_rdma {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit. Kept
// short: unix socket paths inside it must stay under 108 bytes.
class TempDir {
public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/krdma-XXXXXX";
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const {
    std::filesystem::create_directories(path_ + "/" + name);
    return path_ + "/" + name;
  }

private:
  std::string path_;
};

} // namespace kube_rdma
