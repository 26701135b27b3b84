#include "http/metrics_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>

namespace kube_rdma {
namespace {

TEST(MetricsEndpoint, ServesMetricsAndHealthzAndSaysWhatIsWrong) {
  std::atomic<int> renders = 0;
  std::atomic<bool> healthy = true;
  auto server = MetricsServer::start(
      "127.0.0.1:0",
      [&renders] {
        ++renders;
        return std::string("kube_rdma_up 1\n");
      },
      [&healthy]() -> Result<std::string> {
        if (healthy) {
          return std::string("ok\n");
        }
        return makeError("pool rdma/hca is not serving");
      });
  ASSERT_TRUE(server.ok()) << server.error().message;
  ASSERT_GT((*server)->port(), 0);
  httplib::Client client("127.0.0.1", (*server)->port());

  auto metrics = client.Get("/metrics?name[]=x");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "kube_rdma_up 1\n");
  EXPECT_NE(metrics->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);

  auto ok = client.Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "ok\n");
  healthy = false;
  auto sick = client.Get("/healthz");
  ASSERT_TRUE(sick);
  EXPECT_EQ(sick->status, 503);
  EXPECT_EQ(sick->body, "pool rdma/hca is not serving\n");

  auto other = client.Get("/");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(renders, 1);
}

TEST(MetricsEndpoint, AnAddressInUseOrMalformedIsAnError) {
  auto first = MetricsServer::start(
      "127.0.0.1:0", [] { return std::string(); },
      [] { return Result<std::string>(std::string("ok\n")); });
  ASSERT_TRUE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::start(
      taken, [] { return std::string(); }, [] { return Result<std::string>(std::string("ok\n")); });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message,
            "--metrics-address: cannot listen on " + taken + ": Address already in use");
  EXPECT_FALSE(MetricsServer::start(
                   "no-port", [] { return std::string(); },
                   [] { return Result<std::string>(std::string("ok\n")); })
                   .ok());
}

// A port another program listens on, as dcgm-exporter would hold it on the node.
class HeldPort {
public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~HeldPort() { release(); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  void release() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

private:
  int fd_ = -1;
  int port_ = 0;
};

Result<MetricsServerPtr> startWhenFree(const std::string& address, Logger& logger) {
  return MetricsServer::startWhenPortIsFree(
      address, logger, std::chrono::milliseconds(5), [] { return std::string("up 1\n"); },
      [] { return Result<std::string>(std::string("ok\n")); });
}

TEST(MetricsEndpoint, APortAnotherProgramHoldsIsServedOnceItIsFree) {
  std::ostringstream log;
  Logger logger(log);
  HeldPort held;
  auto server = startWhenFree(held.address(), logger);
  ASSERT_TRUE(server.ok()) << server.error().message;
  EXPECT_EQ((*server)->port(), 0);
  EXPECT_NE(log.str().find("another program holds the metrics port: /metrics and /healthz wait "
                           "for it, the devices are served meanwhile; choose a free port with "
                           "--metrics-address\" address=" +
                           held.address() + " retry_every=5ms error=\"Address already in use\""),
            std::string::npos)
      << log.str();

  held.release();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*server)->port() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ((*server)->port(), held.port()) << log.str();
  auto ok = httplib::Client("127.0.0.1", held.port()).Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->body, "ok\n");
  EXPECT_NE(log.str().find("the metrics port is free: serving /metrics and /healthz\" port=" +
                           std::to_string(held.port())),
            std::string::npos)
      << log.str();
}

TEST(MetricsEndpoint, WaitingForAPortStopsWithTheServer) {
  std::ostringstream log;
  Logger logger(log);
  HeldPort held;
  auto server = startWhenFree(held.address(), logger);
  ASSERT_TRUE(server.ok());
  server->reset(); // joins the thread that waits for the port
  held.release();
}

TEST(MetricsEndpoint, OnlyABusyPortIsWaitedFor) {
  std::ostringstream log;
  Logger logger(log);
  // TEST-NET-1: an address no interface of this host has.
  auto absent = startWhenFree("192.0.2.1:9436", logger);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().message,
            "--metrics-address: cannot listen on 192.0.2.1:9436: Cannot assign requested address");
  EXPECT_FALSE(startWhenFree("no-port", logger).ok());
  EXPECT_EQ(log.str(), "");
  // A port free at once is served at once.
  auto free = startWhenFree("127.0.0.1:0", logger);
  ASSERT_TRUE(free.ok());
  EXPECT_GT((*free)->port(), 0);
}

} // namespace
} // namespace kube_rdma
