#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "test/e2e/demo_report.h"
#include "test/plugin/plugin_process.h"

// The demo's console and children, shared by its device-plugin part (demo.cc) and its DRA part
// (demo_dra.cc): sections, checks and the verdict; starting and stopping the programs it shows;
// the real libnccl reading a container's nccl.conf.
namespace kube_rdma {

inline constexpr const char* kIndent = "    ";
// For events on a loaded machine, not a speed target.
inline constexpr std::chrono::milliseconds kDeadline{15000};

// Sections, checks and the verdict: PASS when none of `steps` sections failed a check; a section
// with a check that could not run is counted as skipped, not passed (StepTally).
class Report {
public:
  Report(bool colour, int steps) : colour_(colour), steps_total_(steps), tally_(steps) {}

  void section(const std::string& title);
  void line(const std::string& text);
  void block(const std::string& text);
  // Prints the outcome of one check; a failed check fails the step.
  bool check(bool ok, const std::string& what);
  bool fail(const std::string& what) { return check(false, what); }
  // Prints a check that could not run, and why; the step is then skipped unless a check fails.
  void skip(const std::string& what);
  // Prints the verdict; the exit code.
  int finish();

private:
  std::string paint(const char* code, const std::string& text) const;

  const bool colour_;
  const int steps_total_;
  int steps_ = 0;
  StepTally tally_;
};

// Starts `binary` with its output in `log`, its pid in `slot` (the interrupt handler kills what
// the slots hold); null, with a failed check, when it did not start.
PluginProcessPtr startProgram(Report& report, const std::string& binary,
                              const std::vector<std::string>& args, const std::string& log,
                              std::atomic<pid_t>& slot);

// SIGTERM to a program startProgram started (nothing when null); says so when it exits non-zero.
void stopProgram(PluginProcessPtr& program, std::atomic<pid_t>& slot, const std::string& name);

// The real libnccl.so.2 reads `conf_path` with no NCCL_* in its environment but NCCL_DEBUG (in
// a child process, files in `work_dir`): checks that every line of the file reaches NCCL's
// environment and that NCCL's log says it took NCCL_SOCKET_IFNAME. When no libnccl can be loaded
// (test/libnccl_run.h) those checks are skipped, saying why.
void showNcclReading(Report& report, const std::string& work_dir, const std::string& conf_path);

} // namespace kube_rdma
