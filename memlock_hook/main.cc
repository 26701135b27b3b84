// kube-rdma-memlock-hook: the OCI hook (createRuntime) that raises RLIMIT_MEMLOCK of a
// container's process before its program starts, so every process of the container, root or
// not, may register RDMA memory (docs/memlock.md).
//
//   kube-rdma-memlock-hook [--memlock=unlimited|off|BYTES] [--log-file=PATH] < OCI-state-JSON
//   kube-rdma-memlock-hook --help | --version
//
// It never stops a container from starting: whatever happens it exits 0. The runtime drops a
// successful hook's stderr, so each run also appends one line to the log file.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <string>

#include "common/util/log.h"
#include "common/pools/memlock.h"
#include "common/pools/oci_hook.h"

namespace kube_rdma {
namespace {

constexpr const char* kUsage =
    "kube-rdma-memlock-hook: the OCI hook (createRuntime) that raises a container's "
    "RLIMIT_MEMLOCK\n"
    "Usage: kube-rdma-memlock-hook [OPTIONS] < OCI-state-JSON\n"
    "  --memlock=unlimited|off|BYTES  the limit to raise to (default unlimited)\n"
    "  --log-file=PATH                also append each run's log line to PATH\n"
    "  --help, --version              print this or the version and exit\n";

struct Options {
  MemlockLimit limit;
  std::string log_file; // empty: stderr only
  std::string problem;  // a bad argument: nothing is changed
  std::string print;    // --help or --version: printed instead of a run
};

// By hand rather than with common/util/command_line.h (CLI11): a bad argument must still let the
// container start.
Options parseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--memlock=")) {
      auto limit = parseMemlockLimit(arg.substr(std::strlen("--memlock=")));
      if (limit.ok()) {
        options.limit = *limit;
      } else {
        options.problem = "--memlock: " + limit.error().message;
      }
    } else if (arg.starts_with("--log-file=")) {
      options.log_file = arg.substr(std::strlen("--log-file="));
    } else if (arg == "--help" || arg == "-h") {
      options.print = kUsage;
    } else if (arg == "--version") {
      options.print = "kube-rdma-memlock-hook " KUBE_RDMA_VERSION "\n";
    } else {
      options.problem = "unknown argument \"" + std::string(arg) + "\"";
    }
  }
  return options;
}

std::string rlimitText(rlim_t value) {
  return value == RLIM_INFINITY ? "unlimited" : std::to_string(value);
}

std::string change(rlim_t from, rlim_t to) {
  return from == to ? rlimitText(from) : rlimitText(from) + "->" + rlimitText(to);
}

// Raises the soft limit (and the hard one where it is lower) to `limit`; never lowers either.
void raiseMemlock(Logger& log, const OciState& state, const MemlockLimit& limit) {
  const std::string pid = std::to_string(state.pid);
  const rlim_t want = limit.mode == MemlockLimit::Mode::kBytes ? limit.bytes : RLIM_INFINITY;
  rlimit old{};
  if (prlimit(state.pid, RLIMIT_MEMLOCK, nullptr, &old) != 0) {
    log.warn("cannot read the process's memlock limit, left alone",
             {{"container", state.id}, {"pid", pid}, {"error", std::strerror(errno)}});
    return;
  }
  if (old.rlim_cur >= want) {
    log.info("memlock already high enough", {{"container", state.id},
                                             {"pid", pid},
                                             {"soft", rlimitText(old.rlim_cur)},
                                             {"hard", rlimitText(old.rlim_max)}});
    return;
  }
  rlimit raised{want, std::max(old.rlim_max, want)};
  if (prlimit(state.pid, RLIMIT_MEMLOCK, &raised, nullptr) == 0) {
    log.info("memlock raised", {{"container", state.id},
                                {"pid", pid},
                                {"soft", change(old.rlim_cur, raised.rlim_cur)},
                                {"hard", change(old.rlim_max, raised.rlim_max)}});
    return;
  }
  const int error = errno;
  // Without CAP_SYS_RESOURCE a hard limit cannot go up, but the soft one can reach it.
  raised = {old.rlim_max, old.rlim_max};
  if (error != EPERM || prlimit(state.pid, RLIMIT_MEMLOCK, &raised, nullptr) != 0) {
    log.warn("cannot raise memlock, left alone", {{"container", state.id},
                                                  {"pid", pid},
                                                  {"wanted", rlimitText(want)},
                                                  {"error", std::strerror(error)}});
    return;
  }
  log.warn("memlock raise above the hard limit refused (no CAP_SYS_RESOURCE): soft limit raised to "
           "the hard limit",
           {{"container", state.id},
            {"pid", pid},
            {"wanted", rlimitText(want)},
            {"soft", change(old.rlim_cur, raised.rlim_cur)},
            {"hard", rlimitText(old.rlim_max)}});
}

void run(int argc, char** argv) {
  const Options options = parseArgs(argc, argv);
  if (!options.print.empty()) {
    (void)!write(STDOUT_FILENO, options.print.data(), options.print.size());
    return;
  }
  std::ostringstream line;
  Logger log(line);
  const auto state = readHookInput(log, options.problem, "memlock left alone");
  if (state && options.limit.mode == MemlockLimit::Mode::kOff) {
    log.info("memlock off, left alone", {{"container", state->id}});
  } else if (state) {
    raiseMemlock(log, *state, options.limit);
  }
  reportHookRun(line.str(), options.log_file, "kube-rdma-memlock-hook");
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  // A closed stderr must not kill the hook: the runtime would fail the container.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    kube_rdma::run(argc, argv);
  } catch (...) {
    // Out of memory at worst; the container starts with the runtime's limit.
  }
  return 0;
}
