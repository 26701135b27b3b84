#include "test/e2e/demo_console.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "common/pools/nccl_settings.h"
#include "test/e2e/demo_report.h"
#include "test/libnccl_run.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {

void Report::section(const std::string& title) {
  tally_.begin();
  ++steps_;
  std::cout << "\n"
            << paint("1", "[" + std::to_string(steps_) + "/" + std::to_string(steps_total_) + "] " +
                              title)
            << std::endl;
}

void Report::line(const std::string& text) {
  std::cout << (text.empty() ? "" : kIndent) << text << "\n";
}

void Report::block(const std::string& text) {
  std::cout << text;
}

bool Report::check(bool ok, const std::string& what) {
  std::cout << kIndent << (ok ? paint("32", "ok  ") : paint("31", "FAIL")) << "  " << what << "\n";
  tally_.check(ok);
  return ok;
}

void Report::skip(const std::string& what) {
  std::cout << kIndent << paint("33", "skip") << "  " << what << "\n";
  tally_.skip();
}

int Report::finish() {
  tally_.end();
  const bool pass = tally_.pass();
  std::cout << "\nkube-rdma demo: " << (pass ? paint("32", "PASS") : paint("31", "FAIL")) << " ("
            << tally_.counts() << ")\n";
  return pass ? 0 : 1;
}

std::string Report::paint(const char* code, const std::string& text) const {
  return colour_ ? "\033[" + std::string(code) + "m" + text + "\033[0m" : text;
}

PluginProcessPtr startProgram(Report& report, const std::string& binary,
                              const std::vector<std::string>& args, const std::string& log,
                              std::atomic<pid_t>& slot) {
  const std::string name = std::filesystem::path(binary).filename();
  auto process = PluginProcess::start(binary, args, log);
  if (!report.check(process.ok(),
                    name + " started" + (process.ok() ? "" : ": " + process.error().message))) {
    return nullptr;
  }
  slot = (*process)->pid();
  return std::move(*process);
}

void stopProgram(PluginProcessPtr& program, std::atomic<pid_t>& slot, const std::string& name) {
  if (!program) {
    return;
  }
  auto code = program->terminate(kDeadline);
  slot = 0;
  if (code.ok() && *code != 0) {
    std::cout << kIndent << name << " exited with " << *code << "\n";
  }
  program.reset();
}

void showNcclReading(Report& report, const std::string& work_dir, const std::string& conf_path) {
  std::filesystem::create_directories(work_dir);
  const NcclEnv conf = parseNcclConf(readTestFile(conf_path));
  std::vector<std::string> names;
  for (const auto& [name, value] : conf) {
    names.push_back(name);
  }
  auto run = runNcclGetUniqueId(work_dir, conf_path, {{"NCCL_DEBUG", "INFO"}}, names);
  if (!run.ok()) {
    report.fail("libnccl.so.2 ran ncclGetUniqueId: " + run.error().message);
    return;
  }
  if (!run->nccl_found) {
    // Not a pass: NCCL's own reading of the file is what these checks are about.
    const std::string under_the_check(6, ' ');
    report.skip("NCCL reading the file: no libnccl could be loaded");
    report.line(under_the_check + run->load_error);
    report.line(under_the_check + "(scripts/demo.sh installs NCCL from PyPI's nvidia-nccl-cu13 " +
                "and sets " + kLibncclVariable + ")");
    return;
  }
  report.check(true, "libnccl.so.2 ran ncclGetUniqueId");
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  const std::string version = std::to_string(run->version / 10000) + "." +
                              std::to_string(run->version / 100 % 100) + "." +
                              std::to_string(run->version % 100);
  report.line("the real libnccl.so.2 (NCCL " + version +
              ") in a child process: ncclGetUniqueId with NCCL_DEBUG=INFO and");
  report.line("NCCL_CONF_FILE=" + conf_path + ", no other NCCL_* variable");
  std::vector<std::vector<std::string>> rows;
  bool all_taken = !conf.empty();
  for (const auto& [name, value] : conf) {
    const auto taken = run->env.at(name);
    all_taken = all_taken && taken == value;
    rows.push_back({name + "=" + value, taken == value ? "yes" : "no: " + taken.value_or("unset")});
  }
  report.block(formatTable({"nccl.conf LINE", "IN NCCL'S ENVIRONMENT"}, rows, kIndent));
  for (const std::string& l : splitLines(run->log)) {
    if (l.find("set by environment to") != std::string::npos) {
      report.line("NCCL's log: " + l.substr(l.find("NCCL INFO")));
    }
  }
  report.check(all_taken, "NCCL took every line of the nccl.conf into its environment");
  const auto ifname = std::find_if(conf.begin(), conf.end(),
                                   [](const auto& kv) { return kv.first == "NCCL_SOCKET_IFNAME"; });
  report.check(ifname != conf.end() &&
                   run->log.find("NCCL INFO NCCL_SOCKET_IFNAME set by environment to " +
                                 ifname->second + "\n") != std::string::npos,
               "NCCL's own log: NCCL_SOCKET_IFNAME set by environment to the file's value");
}

} // namespace kube_rdma
