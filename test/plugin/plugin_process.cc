#include "test/plugin/plugin_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace kube_rdma {

Result<std::unique_ptr<PluginProcess>> PluginProcess::start(const std::string& binary,
                                                            const std::vector<std::string>& args,
                                                            const std::string& log_path) {
  std::vector<std::string> argv_storage{binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_storage.size() + 1);
  for (auto& a : argv_storage) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return makeError("cannot open " + log_path + ": " + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return makeError(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  return std::unique_ptr<PluginProcess>(new PluginProcess(pid, log_path));
}

PluginProcess::~PluginProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

Result<int> PluginProcess::terminate(std::chrono::milliseconds timeout) {
  if (reaped_) {
    return makeError("process already reaped");
  }
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      return makeError("plugin did not exit within " + std::to_string(timeout.count()) +
                       " ms of SIGTERM");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5)); // no pidfd wait in glibc 2.36
  }
  reaped_ = true;
  if (WIFSIGNALED(status)) {
    return makeError("plugin died of signal " + std::to_string(WTERMSIG(status)));
  }
  return WEXITSTATUS(status);
}

std::string PluginProcess::logs() const {
  std::ifstream in(log_path_);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

} // namespace kube_rdma
