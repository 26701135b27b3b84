// kube-rdma-memlock-hook as the runtime runs it: the OCI state on stdin, the target a plain
// child process of the test, whose limits are read back from /proc.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "test/memlock/memlock_test_support.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

constexpr rlim_t kSoft = 65536;
constexpr rlim_t kHard = 8388608;
// Only a hook that hangs takes this long; how fast bad input is refused is not timed here (the
// size and nesting limits are what keep it quick, and the cases below reach them).
constexpr std::chrono::seconds kHung(30);

// A sleeping child with RLIMIT_MEMLOCK soft/hard, killed at scope exit.
class LimitedChild {
public:
  LimitedChild(rlim_t soft, rlim_t hard) : pid_(fork()) {
    if (pid_ == 0) {
      pause();
      _exit(0);
    }
    const rlimit limit{soft, hard};
    prlimit(pid_, RLIMIT_MEMLOCK, &limit, nullptr);
  }
  ~LimitedChild() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  std::string memlock() const {
    return memlockOf(readTestFile("/proc/" + std::to_string(pid_) + "/limits"));
  }

private:
  pid_t pid_;
};

std::string stateOf(pid_t pid) {
  return R"({"ociVersion":"1.0.2","id":"x","status":"creating","pid":)" + std::to_string(pid) +
         R"(,"bundle":"/tmp"})";
}

class HookBinary : public testing::Test {
protected:
  // Runs the hook with `args` on `state` (written to a file: stdin), its stderr kept in err_.
  // `prefix` wraps it (setpriv).
  ShellResult hook(const std::string& state, const std::string& args,
                   const std::string& prefix = "") {
    writeTestFile(tmp_.path() + "/state.json", state);
    return runShell(prefix + " " + MEMLOCK_HOOK_BINARY + " " + args + " --log-file=" + log_ +
                    " < " + tmp_.path() + "/state.json 2> " + tmp_.path() + "/stderr");
  }
  std::string log() const { return readTestFile(log_); }
  std::string err() const { return readTestFile(tmp_.path() + "/stderr"); }

  TempDir tmp_;
  const std::string log_ = tmp_.path() + "/memlock-hook.log";
};

TEST_F(HookBinary, RaisesTheSoftLimitOfTheStatesProcess) {
  LimitedChild child(kSoft, kHard);
  ASSERT_EQ(child.memlock(), "65536 8388608");
  const ShellResult r = hook(stateOf(child.pid()), "--memlock=4194304");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(child.memlock(), "4194304 8388608");
  EXPECT_NE(log().find("info \"memlock raised\" container=x pid=" + std::to_string(child.pid()) +
                       " soft=65536->4194304 hard=8388608\n"),
            std::string::npos)
      << log();
  EXPECT_EQ(err(), log()); // the same line on stderr, for runtimes that keep it
}

TEST_F(HookBinary, WithCapSysResourceRaisesTheHardLimitToo) {
  if (!haveCapSysResource()) {
    GTEST_SKIP() << "this process lacks CAP_SYS_RESOURCE (HookBinary.WithoutCapSysResource... "
                    "covers the other path)";
  }
  LimitedChild child(kSoft, kHard);
  EXPECT_EQ(hook(stateOf(child.pid()), "--memlock=unlimited").exit_code, 0);
  EXPECT_EQ(child.memlock(), "unlimited unlimited");
}

TEST_F(HookBinary, WithoutCapSysResourceRaisesTheSoftLimitToTheHardOneAndSaysSo) {
  LimitedChild child(kSoft, kHard);
  // As root, a bounding set without the capability leaves it out of what the hook executes with.
  const ShellResult r = hook(stateOf(child.pid()), "--memlock=unlimited",
                             "setpriv --inh-caps=-sys_resource --bounding-set=-sys_resource");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(child.memlock(), "8388608 8388608");
  EXPECT_NE(log().find("warn \"memlock raise above the hard limit refused (no CAP_SYS_RESOURCE): "
                       "soft limit raised to the hard limit\""),
            std::string::npos)
      << log();
  EXPECT_NE(log().find("wanted=unlimited soft=65536->8388608 hard=8388608"), std::string::npos)
      << log();
}

TEST_F(HookBinary, NeverLowersALimit) {
  LimitedChild child(kHard, kHard);
  EXPECT_EQ(hook(stateOf(child.pid()), "--memlock=4194304").exit_code, 0);
  EXPECT_EQ(child.memlock(), "8388608 8388608");
  EXPECT_NE(log().find("\"memlock already high enough\""), std::string::npos) << log();
}

TEST_F(HookBinary, OffLeavesTheLimitAlone) {
  LimitedChild child(kSoft, kHard);
  EXPECT_EQ(hook(stateOf(child.pid()), "--memlock=off").exit_code, 0);
  EXPECT_EQ(child.memlock(), "65536 8388608");
  EXPECT_NE(log().find("\"memlock off, left alone\""), std::string::npos) << log();
}

TEST_F(HookBinary, BadInputExitsZeroQuicklyAndIsLogged) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "the OCI state is not JSON"},
      {"not json", "the OCI state is not JSON"},
      {R"({"ociVersion":"1.0.2","id":"x"})", "the OCI state has no pid"},
      // pid_max is at most 2^22, so no process has this pid.
      {stateOf(4194304), "cannot read the process's memlock limit"},
      {std::string(1 << 20, '['), "the OCI state nests deeper than 16 levels"},
      {"[" + std::string(3 << 20, ' ') + "]", "the OCI state is larger than 1 MiB"},
  };
  for (const auto& [state, message] : cases) {
    std::filesystem::remove(log_);
    const ShellResult r = hook(state, "");
    EXPECT_EQ(r.exit_code, 0) << message;
    EXPECT_NE(log().find(message), std::string::npos) << log();
  }
}

TEST_F(HookBinary, StdinLeftOpenIsGivenUpAfterTwoSeconds) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string log_arg = "--log-file=" + log_;
  char* argv[] = {const_cast<char*>(MEMLOCK_HOOK_BINARY), log_arg.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, MEMLOCK_HOOK_BINARY, &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0]);
  // The write end stays open meanwhile: the hook must give up on its own.
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + kHung;
  bool exited = false;
  while (!(exited = waitpid(pid, &status, WNOHANG) == pid) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ADD_FAILURE() << "the hook still waited for stdin after " << kHung.count() << " s";
  }
  close(fds[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(log().find("stdin was not closed within 2 s"), std::string::npos) << log();
}

TEST_F(HookBinary, BadArgumentsChangeNothing) {
  LimitedChild child(kSoft, kHard);
  for (const std::string args : {"--memlock=12", "--memlock=lots", "--limit=1"}) {
    EXPECT_EQ(hook(stateOf(child.pid()), args).exit_code, 0) << args;
  }
  EXPECT_EQ(child.memlock(), "65536 8388608");
  EXPECT_NE(log().find("--memlock: a byte count must be at least 65536, got 12"), std::string::npos)
      << log();
  EXPECT_NE(log().find("unknown argument \\\"--limit=1\\\""), std::string::npos) << log();
}

TEST_F(HookBinary, HelpAndVersionPrintWithoutReadingTheState) {
  const ShellResult help = runShell(std::string(MEMLOCK_HOOK_BINARY) + " --help < /dev/null");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--memlock=unlimited|off|BYTES"), std::string::npos) << help.output;
  const ShellResult version =
      runShell(std::string(MEMLOCK_HOOK_BINARY) + " --version --log-file=" + log_);
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(version.output.starts_with("kube-rdma-memlock-hook ")) << version.output;
  EXPECT_FALSE(std::filesystem::exists(log_));
}

TEST_F(HookBinary, LogIsMovedAsidePastOneMebibyte) {
  writeTestFile(log_, std::string(1 << 20, 'x') + "\n");
  LimitedChild child(kSoft, kHard);
  EXPECT_EQ(hook(stateOf(child.pid()), "--memlock=4194304").exit_code, 0);
  EXPECT_EQ(std::filesystem::file_size(log_ + ".1"), (1u << 20) + 1);
  const std::string fresh = log();
  EXPECT_EQ(std::count(fresh.begin(), fresh.end(), '\n'), 1) << fresh;
}

TEST_F(HookBinary, AnUnwritableLogStillRaisesTheLimit) {
  LimitedChild child(kSoft, kHard);
  writeTestFile(tmp_.path() + "/state.json", stateOf(child.pid()));
  const ShellResult r =
      runShell(std::string(MEMLOCK_HOOK_BINARY) + " --memlock=4194304 --log-file=" + tmp_.path() +
               "/missing/hook.log < " + tmp_.path() + "/state.json 2>&1");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(child.memlock(), "4194304 8388608");
  EXPECT_NE(r.output.find("cannot write " + tmp_.path() + "/missing/hook.log"), std::string::npos)
      << r.output;
}

} // namespace
} // namespace kube_rdma
