#include "plugin/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kube_rdma {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;

// A raw TCP client: what a scraper, a port scanner or a broken client sends, byte for byte.
class RawClient {
public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    // Reads give up after 10 s instead of hanging the test if the server never answers.
    timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~RawClient() { ::close(fd_); }

  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes (or the 10 s read timeout).
  std::string readAll() {
    std::string out;
    char chunk[4096];
    ssize_t n;
    while ((n = ::recv(fd_, chunk, sizeof(chunk), 0)) > 0) {
      out.append(chunk, static_cast<size_t>(n));
    }
    return out;
  }

private:
  int fd_;
  bool connected_ = false;
};

int statusOf(const std::string& response) {
  return response.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(response.substr(9, 3)) : -1;
}

std::string bodyOf(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

class HttpServerTest : public testing::Test {
protected:
  void startServer(HttpServerLimits limits = {}) {
    auto server = HttpServer::start(
        "127.0.0.1:0",
        [this](const HttpRequestHead& request) {
          ++handled_;
          if (request.path == "/throw") {
            throw std::runtime_error("handler broke");
          }
          return plainResponse(200, "path " + request.path);
        },
        clock_, logger_, limits);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
  }

  std::string exchange(const std::string& request) {
    RawClient client(server_->port());
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.send(request));
    return client.readAll();
  }

  RealClock clock_;
  std::ostringstream log_;
  Logger logger_{log_};
  std::atomic<int> handled_{0};
  HttpServerPtr server_;
};

TEST_F(HttpServerTest, AnswersGetWithLengthAndClose) {
  startServer();
  const auto response = exchange("GET /metrics?x HTTP/1.1\r\nHost: node\r\n\r\n");
  EXPECT_EQ(statusOf(response), 200) << response;
  EXPECT_EQ(bodyOf(response), "path /metrics\n");
  EXPECT_NE(response.find("Content-Length: 14\r\n"), std::string::npos) << response;
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos) << response;
}

TEST_F(HttpServerTest, RequestArrivingByteByByte) {
  startServer();
  RawClient client(server_->port());
  ASSERT_TRUE(client.connected());
  for (const char c : std::string("GET /healthz HTTP/1.0\r\n\r\n")) {
    ASSERT_TRUE(client.send(std::string(1, c)));
  }
  const auto response = client.readAll();
  EXPECT_EQ(statusOf(response), 200) << response;
  EXPECT_EQ(bodyOf(response), "path /healthz\n");
}

TEST_F(HttpServerTest, WrongMethodIs405AndNeverReachesTheHandler) {
  startServer();
  for (const std::string method : {"POST", "PUT", "DELETE", "HEAD", "OPTIONS", "BREW"}) {
    const auto response = exchange(method + " /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(statusOf(response), 405) << method << ": " << response;
    EXPECT_NE(response.find("Allow: GET\r\n"), std::string::npos) << response;
  }
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, GarbageGets400Or408AndTheServerGoesOn) {
  HttpServerLimits limits;
  limits.request_timeout = 300ms;
  startServer(limits);
  // Binary with a blank line in it: a head that is not HTTP.
  EXPECT_EQ(statusOf(exchange("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\r\n"s)), 400);
  // A TLS ClientHello never ends a head: it times out.
  EXPECT_EQ(statusOf(exchange("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s)), 408);
  EXPECT_EQ(statusOf(exchange("GET /\0 HTTP/1.1\r\n\r\n"s)), 400);
  EXPECT_EQ(statusOf(exchange("GET / HTTP/1.1\r\nno colon here\r\n\r\n")), 400);
  {
    // Half a request, then the client goes away.
    RawClient client(server_->port());
    ASSERT_TRUE(client.send("GET /metr"));
  }
  {
    // Connects and closes without a byte.
    RawClient client(server_->port());
  }
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(statusOf(exchange("GET /after HTTP/1.1\r\n\r\n")), 200);
}

TEST_F(HttpServerTest, OversizedHeadIs431WithoutReadingItAll) {
  HttpServerLimits limits;
  limits.max_head_bytes = 1024;
  startServer(limits);
  // No blank line at all: the limit, not the end of the head, decides.
  const auto endless = exchange("GET / HTTP/1.1\r\nX-Fill: " + std::string(size_t{64} * 1024, 'a'));
  EXPECT_EQ(statusOf(endless), 431) << endless.substr(0, 200);
  // A complete head that is too long.
  const auto complete =
      exchange("GET / HTTP/1.1\r\nX-Fill: " + std::string(2000, 'b') + "\r\n\r\n");
  EXPECT_EQ(statusOf(complete), 431);
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(statusOf(exchange("GET /after HTTP/1.1\r\n\r\n")), 200);
}

TEST_F(HttpServerTest, SlowClientDoesNotHoldOthersAndTimesOutWith408) {
  HttpServerLimits limits;
  limits.request_timeout = 300ms;
  startServer(limits);
  RawClient slow(server_->port());
  ASSERT_TRUE(slow.send("GET /metrics HTTP/1.1\r\n")); // the blank line never comes
  // Answered while the slow one is still waiting.
  EXPECT_EQ(statusOf(exchange("GET /other HTTP/1.1\r\n\r\n")), 200);
  const auto timed_out = slow.readAll();
  EXPECT_EQ(statusOf(timed_out), 408) << timed_out;
  EXPECT_EQ(handled_, 1);
}

TEST_F(HttpServerTest, HandlerExceptionIs500AndLogged) {
  startServer();
  EXPECT_EQ(statusOf(exchange("GET /throw HTTP/1.1\r\n\r\n")), 500);
  EXPECT_NE(log_.str().find("handler broke"), std::string::npos) << log_.str();
  EXPECT_EQ(statusOf(exchange("GET /fine HTTP/1.1\r\n\r\n")), 200);
}

TEST_F(HttpServerTest, MoreClientsThanSlotsAreServedInTurn) {
  HttpServerLimits limits;
  limits.max_connections = 2;
  startServer(limits);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<RawClient>(server_->port()));
    ASSERT_TRUE(clients.back()->connected()); // the backlog holds what the slots do not
    ASSERT_TRUE(clients.back()->send("GET /n" + std::to_string(i) + " HTTP/1.1\r\n\r\n"));
  }
  // Each client closes after its answer, as scrapers do, which frees its slot.
  for (int i = 0; i < 6; ++i) {
    auto& client = clients[static_cast<size_t>(i)];
    const auto response = client->readAll();
    EXPECT_EQ(bodyOf(response), "path /n" + std::to_string(i) + "\n") << response;
    client.reset();
  }
}

TEST_F(HttpServerTest, AClientThatNeverClosesHoldsItsSlotOnlyUntilTheTimeout) {
  HttpServerLimits limits;
  limits.max_connections = 1;
  limits.request_timeout = 300ms;
  startServer(limits);
  RawClient lingering(server_->port());
  ASSERT_TRUE(lingering.send("GET /first HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(bodyOf(lingering.readAll()), "path /first\n"); // and keeps its socket open
  EXPECT_EQ(bodyOf(exchange("GET /second HTTP/1.1\r\n\r\n")), "path /second\n");
}

TEST_F(HttpServerTest, StopsWithConnectionsOpen) {
  startServer();
  RawClient idle(server_->port());
  RawClient partial(server_->port());
  ASSERT_TRUE(partial.send("GET / HTTP/1.1\r\n"));
  server_.reset(); // returns: the destructor wakes the thread, which closes everything
  EXPECT_EQ(idle.readAll(), "");
}

TEST_F(HttpServerTest, PortInUseIsAnErrorNamingTheAddress) {
  startServer();
  const std::string address = "127.0.0.1:" + std::to_string(server_->port());
  auto second = HttpServer::start(
      address, [](const HttpRequestHead&) { return plainResponse(200, ""); }, clock_, logger_);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find(address), std::string::npos) << second.error().message;
  auto bad = HttpServer::start(
      "127.0.0.1", [](const HttpRequestHead&) { return plainResponse(200, ""); }, clock_, logger_);
  ASSERT_FALSE(bad.ok());
}

} // namespace
} // namespace kube_rdma
