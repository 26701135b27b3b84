#include "plugin/rdmactl/cli.h"

#include <map>

namespace kube_rdma {

std::string rdmactlUsage() {
  return "usage: rdmactl [--sysfs-root DIR] [--proc-root DIR] [--dev-root DIR] [--json] COMMAND\n"
         "\n"
         "commands:\n"
         "  devices                 RDMA devices, ports and netdevs (like ibdev2netdev -v), GPUs\n"
         "  gids [DEVICE]           GID tables (like show_gids)\n"
         "  nccl-env [--pool NAME] [--config FILE]\n"
         "                          the node's NCCL settings for a pool, as nccl.conf lines\n"
         "  doctor                  checks with a verdict and a hint each; exit 1 on a failure\n"
         "\n"
         "  --sysfs-root DIR   sysfs to read (default /sys)\n"
         "  --proc-root DIR    procfs for the default route (default /proc)\n"
         "  --dev-root DIR     where /dev/infiniband nodes are checked (default /dev)\n"
         "  --json             JSON output\n";
}

Result<RdmactlOptions> parseRdmactlArgs(const std::vector<std::string>& args) {
  static const std::map<std::string, RdmactlCommand> kCommands = {
      {"devices", RdmactlCommand::kDevices},
      {"gids", RdmactlCommand::kGids},
      {"nccl-env", RdmactlCommand::kNcclEnv},
      {"doctor", RdmactlCommand::kDoctor},
      {"help", RdmactlCommand::kHelp}};
  RdmactlOptions opts;
  bool have_command = false;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--json") {
      opts.json = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      opts.command = RdmactlCommand::kHelp;
      return opts;
    }
    if (arg.rfind("--", 0) == 0) {
      std::string value;
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return makeError(arg + " needs a value");
      }
      std::string* target = arg == "--sysfs-root"  ? &opts.sysfs_root
                            : arg == "--proc-root" ? &opts.proc_root
                            : arg == "--dev-root"  ? &opts.dev_root
                            : arg == "--pool"      ? &opts.pool
                            : arg == "--config"    ? &opts.config
                                                   : nullptr;
      if (target == nullptr) {
        return makeError("unknown flag " + arg);
      }
      if (value.empty()) {
        return makeError(arg + " needs a non-empty value");
      }
      *target = value;
      continue;
    }
    if (!have_command) {
      const auto it = kCommands.find(arg);
      if (it == kCommands.end()) {
        return makeError("unknown command \"" + arg + "\"");
      }
      opts.command = it->second;
      have_command = true;
      continue;
    }
    positional.push_back(arg);
  }
  if (!have_command) {
    return makeError("no command given");
  }
  if ((!opts.pool.empty() || !opts.config.empty()) && opts.command != RdmactlCommand::kNcclEnv) {
    return makeError("--pool and --config apply to nccl-env only");
  }
  if (opts.command == RdmactlCommand::kGids && positional.size() == 1) {
    opts.device = positional[0];
  } else if (!positional.empty()) {
    return makeError("unexpected argument \"" + positional[0] + "\"");
  }
  return opts;
}

} // namespace kube_rdma
