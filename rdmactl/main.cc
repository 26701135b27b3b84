// rdmactl: node troubleshooting (ibdev2netdev, show_gids, the node's NCCL settings, doctor).
// This file gathers the facts (discovery, environment, process limits, device nodes) and prints;
// the logic lives in views.cc and doctor.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h> // environ (declared under _GNU_SOURCE, which g++ and clang++ define)
#include <vector>

#include "common/util/log.h"
#include "common/checks/node_snapshot.h"
#include "common/pools/plugin_config.h"
#include "common/util/process_start.h"
#include "common/node/sysfs_attributes.h"
#include "common/node/verbs_discovery.h"
#include "rdmactl/cli.h"
#include "rdmactl/doctor.h"
#include "rdmactl/views.h"

namespace kube_rdma {
namespace {

constexpr int kCapIpcLock = 14;

NetdevStates readNetdevStates(const std::string& sysfs_root, const NodeTopology& topo) {
  NetdevStates states;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      if (p.netdev.empty()) {
        continue;
      }
      auto oper = readAttribute(sysfs_root + "/class/net/" + p.netdev + "/operstate");
      states[p.netdev] = oper ? (*oper == "up" ? "Up" : "Down") : "Unknown";
    }
  }
  return states;
}

// The current process: its memlock limit, CAP_IPC_LOCK and /dev/shm (always the process's own,
// whatever the roots point at: these are limits of whoever runs NCCL here).
ProcessFacts readProcessFacts() {
  ProcessFacts facts;
  rlimit lim{};
  if (::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    facts.memlock_bytes = lim.rlim_cur;
  }
  if (auto status = readAttribute("/proc/self/status", kMaxConfigFileBytes)) {
    const size_t pos = status->find("CapEff:");
    if (pos != std::string::npos) {
      const uint64_t caps = std::strtoull(status->c_str() + pos + 7, nullptr, 16);
      facts.cap_ipc_lock = (caps >> kCapIpcLock) & 1;
    }
  }
  struct statvfs vfs {};
  if (::statvfs("/dev/shm", &vfs) == 0) {
    facts.shm_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  }
  return facts;
}

NcclEnv ncclEnvironment() {
  NcclEnv env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (entry.rfind("NCCL_", 0) == 0 && eq != std::string::npos) {
      env.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  std::sort(env.begin(), env.end());
  return env;
}

// MLNX_OFED's and DOCA's version, as the guide's `ofed_info -s` step prints it. The one fact the
// doctor gets by running a program, on the machine rdmactl runs on whatever the roots say.
FileRead runOfedInfo() {
  FileRead f{"ofed_info -s (run by rdmactl)", std::nullopt};
  FILE* pipe = ::popen("command -v ofed_info >/dev/null 2>&1 && ofed_info -s 2>/dev/null", "r");
  if (pipe == nullptr) {
    return f;
  }
  std::string out;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0 && out.size() < 4096;) {
    out.append(buf, n);
  }
  if (::pclose(pipe) == 0 && !out.empty()) {
    f.text = std::move(out);
  }
  return f;
}

// rdmactl run in a pod: the workload's side of the doctor (issue: CDI silently ignored).
WorkloadFiles workloadEnvironment() {
  WorkloadFiles w;
  w.in_pod = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (const char* cdi = std::getenv("KUBE_RDMA_CDI")) {
    w.kube_rdma_cdi = cdi;
  }
  return w;
}

int fail(const std::string& message) {
  std::cerr << "rdmactl: " << message << "\n";
  return 2;
}

int run(const RdmactlOptions& opts) {
  Logger logger(std::cerr, LogFormat::kText,
                opts.command == RdmactlCommand::kDoctor ? LogLevel::kInfo : LogLevel::kWarn);
  const auto discovered = discoverNode({opts.sysfs_root, opts.proc_root}, opts.discovery, logger);
  if (!discovered) {
    return fail(discovered.error().message);
  }
  const NodeTopology& topo = *discovered;
  for (const auto& w : topo.warnings) {
    std::cerr << "rdmactl: warning: " << w.path << ": " << w.message << "\n";
  }
  switch (opts.command) {
  case RdmactlCommand::kDevices: {
    const auto states = readNetdevStates(opts.sysfs_root, topo);
    std::cout << (opts.json ? renderDevicesJson(topo, states) : renderDevicesText(topo, states));
    return 0;
  }
  case RdmactlCommand::kGids: {
    auto rows = gidRows(topo, opts.device);
    if (!rows) {
      return fail(rows.error().message);
    }
    std::cout << (opts.json ? renderGidsJson(*rows) : renderGidsText(*rows));
    return 0;
  }
  case RdmactlCommand::kNcclEnv: {
    auto config = loadPluginConfig(opts.config);
    if (!config) {
      return fail(config.error().message);
    }
    auto settings = poolNcclEnv(topo, *config, opts.pool);
    if (!settings) {
      return fail(settings.error().message);
    }
    auto text = opts.json ? renderNcclEnvJson(*settings) : renderNcclConf(settings->env);
    if (!text) {
      return fail(text.error().message);
    }
    std::cout << *text;
    return 0;
  }
  case RdmactlCommand::kDoctor: {
    auto config = loadPluginConfig(opts.config);
    if (!config) {
      return fail(config.error().message);
    }
    const NodeSnapshot snapshot =
        readNodeSnapshot({opts.sysfs_root, opts.proc_root, opts.dev_root}, topo,
                         {loadedLibibverbs(), runOfedInfo(), workloadEnvironment()});
    DoctorInput input;
    input.topology = &topo;
    input.dev_root = opts.dev_root;
    input.uverbs_nodes = snapshot.uverbs_nodes;
    input.process = readProcessFacts();
    input.nccl_env = ncclEnvironment();
    // What NCCL reads after the environment; unreadable or absent: nothing.
    const auto conf = readAttribute("/etc/nccl.conf", kMaxConfigFileBytes);
    input.nccl_conf = conf ? parseNcclConf(*conf) : NcclEnv{};
    input.interfaces = listDirectory(opts.sysfs_root + "/class/net");
    std::sort(input.interfaces.begin(), input.interfaces.end());
    input.config = &*config;
    input.snapshot = &snapshot;
    const auto checks = runDoctor(input);
    std::cout << (opts.json ? renderChecksJson(checks) : renderChecksText(checks));
    return anyFailed(checks) ? 1 : 0;
  }
  }
  return 0;
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  auto opts = kube_rdma::parseRdmactlArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (const std::optional<int> code = kube_rdma::exitBeforeRunning("rdmactl", opts)) {
    return *code;
  }
  return kube_rdma::run(*opts);
}
