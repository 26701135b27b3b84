#include "common/util/process_start.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kube_rdma {
namespace {

struct Flags {
  std::string exit_message;
};

TEST(ExitBeforeRunning, AWrongCommandLineIsExitCodeTwoWithTheProgramsName) {
  testing::internal::CaptureStderr();
  const Result<Flags> wrong = makeError("--bogus: unknown flag");
  EXPECT_EQ(exitBeforeRunning("rdma-dra-driver", wrong), 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "rdma-dra-driver: --bogus: unknown flag (see --help)\n");
}

TEST(ExitBeforeRunning, HelpPrintsAndExitsZeroAndFlagsToRunGoOn) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(exitBeforeRunning("rdmactl", Result<Flags>(Flags{"Usage: ...\n"})), 0);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "Usage: ...\n");
  EXPECT_EQ(exitBeforeRunning("rdmactl", Result<Flags>(Flags{})), std::nullopt);
}

// In a child process, as it changes the process's signal handling: after takeStopSignals() a
// SIGPIPE (what writing to a socket the peer closed raises) is ignored, and a SIGTERM waits,
// blocked, for the thread that takes it.
TEST(TakeStopSignals, SigpipeIsIgnoredAndSigtermWaitsToBeTaken) {
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    const sigset_t signals = takeStopSignals();
    raise(SIGPIPE);
    raise(SIGTERM);
    sigset_t pending;
    sigpending(&pending);
    int taken = 0;
    _exit(sigismember(&pending, SIGTERM) == 1 && sigwait(&signals, &taken) == 0 && taken == SIGTERM
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
} // namespace kube_rdma
