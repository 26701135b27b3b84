#pragma once

#include <signal.h>

#include <iostream>
#include <optional>
#include <string>

#include "common/util/result.h"

// The first steps of every kube-rdma daemon's main(), in one place.
namespace kube_rdma {

// What main() does with its parsed command line before running: a wrong one is exit code 2 with
// "<program>: <what is wrong> (see --help)" on stderr; --help and --version print their text and
// exit 0; nullopt means run. `Flags` has an `exit_message` (parseArgs' text).
template <typename Flags>
std::optional<int> exitBeforeRunning(const std::string& program, const Result<Flags>& flags) {
  if (!flags.ok()) {
    std::cerr << program << ": " << flags.error().message << " (see --help)\n";
    return 2;
  }
  if (!flags->exit_message.empty()) {
    std::cout << flags->exit_message;
    return 0;
  }
  return std::nullopt;
}

// Blocks SIGTERM and SIGINT in the calling thread, and so in every thread it starts afterwards
// (one thread then takes them, with sigwait or sigtimedwait), and ignores SIGPIPE: a peer that
// closes a socket (the kubelet, the API server, a client of /metrics) fails the write instead of
// killing the daemon. Call it before any thread exists. Returns the blocked set, to wait on.
sigset_t takeStopSignals();

} // namespace kube_rdma
