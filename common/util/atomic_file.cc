#include "common/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  // Readable by the containers that mount it; the daemons run as root.
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

Status removeFileIfPresent(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return systemError("cannot remove", path);
  }
  return Ok{};
}

} // namespace kube_rdma
