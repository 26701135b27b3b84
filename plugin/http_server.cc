#include "plugin/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <utility>

#include "common/listen_address.h"

namespace kube_rdma {

struct HttpServer::Connection {
  enum class Phase { kReading, kWriting, kDraining };

  int fd = -1;
  std::chrono::steady_clock::time_point deadline;
  Phase phase = Phase::kReading;
  std::string in;
  std::string out;
  size_t sent = 0;
};

namespace {

constexpr int kListenBacklog = 64;
// After EMFILE and friends the listener stays readable; pausing accept avoids a busy loop.
constexpr auto kAcceptPause = std::chrono::seconds(1);

int boundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return -1;
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

} // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& address,
                                                      HttpHandler handler, const Clock& clock,
                                                      Logger& logger, HttpServerLimits limits) {
  auto listen = parseListenAddress(address);
  if (!listen) {
    return listen.error();
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(listen->port);
  if (const int rc = ::getaddrinfo(listen->host.c_str(), port_text.c_str(), &hints, &found);
      rc != 0) {
    return makeError("cannot resolve host '" + listen->host + "': " + ::gai_strerror(rc));
  }
  int fd = -1;
  std::string why = "no address";
  for (const addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    fd = ::socket(candidate->ai_family, candidate->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  candidate->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        ::listen(fd, kListenBacklog) == 0) {
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return makeError("cannot listen on " + address + ": " + why);
  }
  const int port = boundPort(fd);
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (port < 0 || wake_fd < 0) {
    const std::string error = std::strerror(errno);
    ::close(fd);
    return makeError("cannot set up the listener on " + address + ": " + error);
  }
  return std::unique_ptr<HttpServer>(
      new HttpServer(fd, wake_fd, port, std::move(handler), clock, logger, limits));
}

HttpServer::HttpServer(int listen_fd, int wake_fd, int port, HttpHandler handler,
                       const Clock& clock, Logger& logger, HttpServerLimits limits)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), handler_(std::move(handler)),
      clock_(clock), logger_(logger), limits_(limits), thread_([this] { run(); }) {}

HttpServer::~HttpServer() {
  const uint64_t one = 1;
  // An eventfd write of 1 cannot fail short of a counter overflow.
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof(one));
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void HttpServer::run() {
  using Phase = Connection::Phase;
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  auto accept_paused_until = std::chrono::steady_clock::time_point::min();
  while (true) {
    const auto now = clock_.now();
    const bool accepting =
        connections.size() < limits_.max_connections && now >= accept_paused_until;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0}); // poll() skips negative fds
    auto wake_at = now < accept_paused_until ? accept_paused_until
                                             : std::chrono::steady_clock::time_point::max();
    for (const auto& connection : connections) {
      fds.push_back({connection.fd,
                     static_cast<short>(connection.phase == Phase::kWriting ? POLLOUT : POLLIN),
                     0});
      wake_at = std::min(wake_at, connection.deadline);
    }
    int timeout_ms = -1; // idle: sleep until a connection or the stop signal, no periodic wake
    if (wake_at != std::chrono::steady_clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) {
        continue;
      }
      logger_.error("HTTP server stopped: poll failed", {{"error", std::strerror(errno)}});
      break;
    }
    if (fds[0].revents != 0) {
      break; // the destructor asks us to stop
    }
    const auto after = clock_.now();
    for (size_t i = 0; i < connections.size(); ++i) {
      auto& connection = connections[i];
      const short revents = fds[i + 2].revents;
      bool open = true;
      if (revents != 0) {
        open =
            connection.phase == Phase::kWriting ? onWritable(connection) : onReadable(connection);
      }
      if (open && after >= connection.deadline) {
        if (connection.phase == Phase::kReading) {
          answer(connection, plainResponse(408, "no complete request in time"));
          onWritable(connection); // one try: the peer is slow, it gets no more time
        }
        open = false;
      }
      if (!open) {
        ::close(connection.fd);
        connection.fd = -1;
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.fd < 0; });
    if (accepting && (fds[1].revents & POLLIN) != 0 && !acceptAll(connections)) {
      accept_paused_until = after + kAcceptPause;
    }
  }
  for (const auto& connection : connections) {
    ::close(connection.fd);
  }
}

bool HttpServer::acceptAll(std::vector<Connection>& connections) {
  while (connections.size() < limits_.max_connections) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Connection connection;
      connection.fd = fd;
      connection.deadline = clock_.now() + limits_.request_timeout;
      connections.push_back(std::move(connection));
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    }
    logger_.warn("HTTP server cannot accept a connection, pausing accept for 1 s",
                 {{"port", std::to_string(port_)}, {"error", std::strerror(errno)}});
    return false;
  }
  return true;
}

bool HttpServer::onReadable(Connection& connection) {
  char chunk[4096];
  const ssize_t n = ::recv(connection.fd, chunk, sizeof(chunk), 0);
  if (n < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  }
  if (n == 0 || connection.phase == Connection::Phase::kDraining) {
    return n > 0; // EOF ends the connection; input after the answer is discarded
  }
  connection.in.append(chunk, static_cast<size_t>(n));
  const size_t head = requestHeadLength(connection.in);
  if (head == 0 && connection.in.size() <= limits_.max_head_bytes) {
    return true; // wait for the rest of the head
  }
  if (head == 0 || head > limits_.max_head_bytes) {
    answer(connection, plainResponse(431, "request head over " +
                                              std::to_string(limits_.max_head_bytes) + " bytes"));
  } else {
    answer(connection, respond(std::string_view(connection.in).substr(0, head)));
  }
  return onWritable(connection);
}

bool HttpServer::onWritable(Connection& connection) {
  while (connection.sent < connection.out.size()) {
    const ssize_t n = ::send(connection.fd, connection.out.data() + connection.sent,
                             connection.out.size() - connection.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    connection.sent += static_cast<size_t>(n);
  }
  // Half-close and read until the peer closes: closing with unread input would send a reset that
  // can destroy the answer before the client has read it (a 431 to a client still sending).
  ::shutdown(connection.fd, SHUT_WR);
  connection.out = std::string();
  connection.phase = Connection::Phase::kDraining;
  return true;
}

void HttpServer::answer(Connection& connection, const HttpResponse& response) {
  connection.in = std::string();
  connection.out = serializeResponse(response);
  connection.sent = 0;
  connection.phase = Connection::Phase::kWriting;
}

HttpResponse HttpServer::respond(std::string_view head) const {
  try {
    return respondToHead(head, handler_);
  } catch (const std::exception& e) {
    logger_.error("HTTP handler failed", {{"port", std::to_string(port_)}, {"error", e.what()}});
    return plainResponse(500, "internal error");
  }
}

} // namespace kube_rdma
