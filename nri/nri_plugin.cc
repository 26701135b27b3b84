#include "nri/nri_plugin.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

namespace kube_rdma {
namespace {

Result<int> connectUnix(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) {
    return makeError("NRI socket path " + path + " is too long for a unix socket");
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return makeError(std::string("socket: ") + std::strerror(errno));
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    close(fd);
    return makeError("cannot connect to " + path + ": " + std::strerror(error));
  }
  return fd;
}

Status writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return makeError(std::string("write to the runtime: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Ok{};
}

} // namespace

NriPlugin::NriPlugin(NriPluginOptions options, CreateContainerHandler handler, Logger& log,
                     PodSeenHandler on_pod)
    : options_(std::move(options)), handler_(std::move(handler)), on_pod_(std::move(on_pod)),
      log_(log), stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

NriPlugin::~NriPlugin() {
  stop();
  if (stop_fd_ >= 0) {
    close(stop_fd_);
  }
}

void NriPlugin::start() {
  thread_ = std::thread([this] { run(); });
}

void NriPlugin::stop() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool NriPlugin::waitUnlessStopped(std::chrono::milliseconds wait) const {
  pollfd stop{stop_fd_, POLLIN, 0};
  return poll(&stop, 1, static_cast<int>(wait.count())) == 0;
}

void NriPlugin::run() {
  std::string last_problem;
  do {
    auto socket = connectUnix(options_.socket_path);
    bool configured = false;
    Status ended = socket ? serve(*socket, configured) : Status(socket.error());
    if (socket) {
      close(*socket);
    }
    if (configured) {
      last_problem.clear();
    }
    if (!ended && ended.error().message != last_problem) {
      // Once per kind of trouble: a node whose runtime has NRI off would log every 5 s.
      last_problem = ended.error().message;
      log_.warn("NRI: no connection to the container runtime; containers on a pod network get "
                "their GID index in nccl.conf only, not in their environment",
                {{"socket", options_.socket_path},
                 {"error", last_problem},
                 {"retry_ms", std::to_string(options_.retry.count())}});
    }
  } while (waitUnlessStopped(options_.retry));
}

Status NriPlugin::serve(int socket, bool& configured) {
  NriSession session(options_.name, options_.index, handler_, on_pod_);
  if (auto sent = writeAll(socket, session.registration()); !sent) {
    return sent;
  }
  std::array<char, size_t{64} << 10U> buffer{};
  while (true) {
    std::array<pollfd, 2> fds{{{socket, POLLIN, 0}, {stop_fd_, POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return makeError(std::string("poll: ") + std::strerror(errno));
    }
    if (fds[1].revents != 0) {
      return Ok{};
    }
    const ssize_t n = read(socket, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return makeError(n == 0 ? "the runtime closed the connection"
                              : std::string("read: ") + std::strerror(errno));
    }
    auto answers = session.receive({buffer.data(), static_cast<size_t>(n)});
    if (!answers) {
      return answers.error();
    }
    if (auto sent = writeAll(socket, *answers); !sent) {
      return sent;
    }
    if (session.configured() && !configured) {
      configured = true;
      log_.info("NRI: registered with the container runtime",
                {{"runtime", session.runtime()}, {"socket", options_.socket_path}});
    }
  }
}

} // namespace kube_rdma
