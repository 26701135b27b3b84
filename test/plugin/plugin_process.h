#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/util/result.h"

namespace kube_rdma {

// The real rdma-device-plugin binary as a child process, its stdout and stderr in a log file.
class PluginProcess {
public:
  static Result<std::unique_ptr<PluginProcess>> start(const std::string& binary,
                                                      const std::vector<std::string>& args,
                                                      const std::string& log_path);
  // Kills the child if it is still running.
  ~PluginProcess();

  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits. @return the exit code, or an Error on a signal death or timeout.
  Result<int> terminate(std::chrono::milliseconds timeout);
  std::string logs() const;

private:
  PluginProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}

  pid_t pid_;
  const std::string log_path_;
  bool reaped_ = false;
};
using PluginProcessPtr = std::unique_ptr<PluginProcess>;

// A loopback TCP port nobody listens on now (0 when none could be found), for a child's
// listen address.
int freeLoopbackPort();

} // namespace kube_rdma
