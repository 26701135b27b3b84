#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "test/fakes/a100_pools.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {

inline const std::string kA100 = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";

struct ShellResult {
  int exit_code = -1; // -1: killed by a signal
  std::string output; // stdout; the command redirects stderr where it wants it
};

inline ShellResult runShell(const std::string& command) {
  ShellResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return r;
  }
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    r.output.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// "soft hard" of the "Max locked memory" line of a /proc/PID/limits text, e.g.
// "65536 8388608" or "unlimited unlimited"; "" when there is none.
inline std::string memlockOf(const std::string& proc_limits) {
  std::istringstream lines(proc_limits);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Max locked memory")) {
      std::istringstream fields(line.substr(std::string("Max locked memory").size()));
      std::string soft, hard;
      fields >> soft >> hard;
      return soft + " " + hard;
    }
  }
  return "";
}

// Whether this process may raise a hard limit (root in a container often may not).
inline bool haveCapSysResource() {
  constexpr int kCapSysResource = 24; // linux/capability.h
  const std::string status = readTestFile("/proc/self/status");
  const size_t at = status.find("CapEff:");
  return at != std::string::npos &&
         (std::stoull(status.substr(at + 7), nullptr, 16) >> kCapSysResource & 1) != 0;
}

} // namespace kube_rdma
