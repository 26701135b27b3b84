#pragma once

#include <string>
#include <vector>

#include "common/util/result.h"
#include "common/node/verbs_discovery.h"

// rdmactl's command line: `rdmactl [--sysfs-root DIR] [--proc-root DIR] [--dev-root DIR]
// [--discovery BACKEND] [--json] COMMAND [ARGS]` (DESIGN.md "Interfaces"). Global flags may also
// follow the command.
namespace kube_rdma {

enum class RdmactlCommand { kDevices, kGids, kNcclEnv, kDoctor };

struct RdmactlOptions {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  DiscoveryBackend discovery = DiscoveryBackend::kAuto;
  bool json = false;
  RdmactlCommand command = RdmactlCommand::kDevices;
  std::string device; // gids: only this device
  std::string pool;   // nccl-env: the pool's resource name; empty: the first pool with HCAs
  std::string config; // nccl-env, doctor: plugin config file; empty: the default pools
  // --help, `help` or --version: print this and exit 0 instead of running a command.
  std::string exit_message;
};

// Parses argv without argv[0] (common/util/command_line.h: "--flag value" or "--flag=value").
// Errors name the offending argument.
Result<RdmactlOptions> parseRdmactlArgs(const std::vector<std::string>& args);

} // namespace kube_rdma
