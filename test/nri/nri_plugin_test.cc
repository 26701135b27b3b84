#include "nri/nri_plugin.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>

#include "test/plugin/temp_dir.h"
#include "ttrpc/request.pb.h"

// The connection loop against a listening unix socket that plays the runtime's side of the
// socket: accept, read the registration, configure, then close, as containerd does when it
// restarts. The protocol itself is nri_session_test's; the real containerd is the cluster
// suites'.
namespace kube_rdma {
namespace {

class RuntimeSocket {
public:
  explicit RuntimeSocket(const std::string& path) : fd_(socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
  }
  ~RuntimeSocket() { close(fd_); }

  // Accepts one plugin, reads until its registration is whole, configures it and reads the
  // answer; returns the connection.
  int acceptAndConfigure() {
    const int conn = accept(fd_, nullptr, nullptr);
    TtrpcFrameDecoder decoder;
    readUntilMessage(conn, decoder);
    EXPECT_EQ(decoder.takeMessage().conn, MuxConn::kRuntimeService);
    nriapi::ConfigureRequest configure;
    configure.set_runtime_name("test-runtime");
    ttrpc::Request request;
    request.set_service("nri.pkg.api.v1alpha1.Plugin");
    request.set_method("Configure");
    request.set_payload(configure.SerializeAsString());
    const std::string bytes = encodeTtrpcFrame(
        {MuxConn::kPluginService, 1, TtrpcType::kRequest, 0, request.SerializeAsString()});
    EXPECT_EQ(write(conn, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    readUntilMessage(conn, decoder);
    EXPECT_EQ(decoder.takeMessage().type, TtrpcType::kResponse);
    return conn;
  }

private:
  static void readUntilMessage(int conn, TtrpcFrameDecoder& decoder) {
    char buffer[4096];
    while (!decoder.hasMessage()) {
      const ssize_t n = read(conn, buffer, sizeof buffer);
      ASSERT_GT(n, 0);
      ASSERT_TRUE(decoder.feed({buffer, static_cast<size_t>(n)}).ok());
    }
  }
  int fd_;
};

nriapi::ContainerAdjustment noAdjustment(const nriapi::CreateContainerRequest& /*request*/) {
  return {};
}

TEST(NriPlugin, ConnectsAgainAfterTheRuntimeRestarts) {
  TempDir dir;
  const std::string path = dir.path() + "/nri.sock";
  std::ostringstream sink;
  Logger log(sink);
  NriPluginOptions options;
  options.socket_path = path;
  options.retry = std::chrono::milliseconds(20);
  NriPlugin plugin(options, noAdjustment, log);
  plugin.start(); // no runtime yet: refused, and tried again
  {
    RuntimeSocket runtime(path);
    close(runtime.acceptAndConfigure()); // the runtime goes away
    close(runtime.acceptAndConfigure()); // and the plugin is back
  }
  plugin.stop();
  const std::string logged = sink.str();
  size_t registered = 0;
  for (size_t at = 0; (at = logged.find("NRI: registered", at)) != std::string::npos; ++at) {
    ++registered;
  }
  EXPECT_EQ(registered, 2u) << logged;
  EXPECT_NE(logged.find("runtime=\"test-runtime \""), std::string::npos) << logged;
  // Between the two: the first connection's end. (The second's may or may not be logged before
  // stop() comes.)
  const size_t closed = logged.find("the runtime closed the connection");
  EXPECT_NE(closed, std::string::npos) << logged;
  EXPECT_LT(logged.find("NRI: registered"), closed);
  EXPECT_GT(logged.rfind("NRI: registered"), closed);
}

TEST(NriPlugin, StopsWhileWaitingForARuntime) {
  TempDir dir;
  std::ostringstream sink;
  Logger log(sink);
  NriPluginOptions options;
  options.socket_path = dir.path() + "/absent.sock";
  options.retry = std::chrono::hours(1);
  NriPlugin plugin(options, noAdjustment, log);
  plugin.start();
  plugin.stop(); // returns: the wait is cut short, not an hour long
  EXPECT_NE(sink.str().find("No such file or directory"), std::string::npos) << sink.str();
}

} // namespace
} // namespace kube_rdma
