#include "plugin/state_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

namespace kube_rdma {
namespace {

Error systemError(const std::string& what, const std::string& path) {
  return makeError(what + " " + path + ": " + std::strerror(errno));
}

} // namespace

Status writeFileAtomically(const std::string& path, const std::string& content) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // A dot file: readers of the directory that skip hidden files (NFD's features.d) never see it.
  std::string tmp = dir + "/." + name + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return systemError("cannot create a temporary file for", path);
  }
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return systemError("cannot write", tmp);
    }
    written += static_cast<size_t>(n);
  }
  // Readable by the containers that mount it; the plugin runs as root.
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return systemError("cannot fsync", tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return systemError("cannot rename into", path);
  }
  // The rename itself is durable only once the directory is synced.
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Ok{};
}

uint64_t fnv1a64(std::string_view data) {
  uint64_t hash = 0xcbf29ce484222325ULL; // FNV-1a offset basis and prime (64 bit)
  for (const char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string ncclConfFileName(const std::string& content) {
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t hash = fnv1a64(content);
  std::string name = "nccl-";
  for (int shift = 60; shift >= 0; shift -= 4) {
    name += kHex[(hash >> shift) & 0xf];
  }
  return name + ".conf";
}

Status StateWriter::prepare() const {
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  if (ec) {
    return makeError("cannot create state directory " + state_dir_ + ": " + ec.message());
  }
  return Ok{};
}

Status StateWriter::writeTopology(const std::string& json) const {
  return writeFileAtomically(state_dir_ + "/topology.json", json);
}

Result<std::string> StateWriter::writeNcclConf(const std::string& content) const {
  const std::string path = state_dir_ + "/" + ncclConfFileName(content);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<size_t>(st.st_size) == content.size()) {
    return path; // same name, same content: written before
  }
  if (auto status = writeFileAtomically(path, content); !status) {
    return status.error();
  }
  return path;
}

} // namespace kube_rdma
