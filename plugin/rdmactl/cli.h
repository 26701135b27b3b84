#pragma once

#include <string>
#include <vector>

#include "common/result.h"

// rdmactl's command line: `rdmactl [--sysfs-root DIR] [--proc-root DIR] [--dev-root DIR] [--json]
// COMMAND [ARGS]` (DESIGN.md "Interfaces"). Global flags may also follow the command.
namespace kube_rdma {

enum class RdmactlCommand { kDevices, kGids, kNcclEnv, kDoctor, kHelp };

struct RdmactlOptions {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  bool json = false;
  RdmactlCommand command = RdmactlCommand::kHelp;
  std::string device; // gids: only this device
  std::string pool;   // nccl-env: the pool's resource name; empty: the first pool with HCAs
  std::string config; // nccl-env: plugin config file; empty: the default pools
};

// Parses argv without argv[0]; "--flag value" and "--flag=value" both work. Errors name the
// offending argument.
Result<RdmactlOptions> parseRdmactlArgs(const std::vector<std::string>& args);

std::string rdmactlUsage();

} // namespace kube_rdma
