#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/nccl_settings.h"
#include "common/result.h"

// Hands an nccl.conf to the real libnccl.so.2 (NCCL 2.28 on the project's machines) and reads back
// what NCCL did with it: its own INFO log and the environment it set. ncclGetUniqueId needs no
// GPU. Used by the libnccl tests and the demo.
namespace kube_rdma {

struct NcclRun {
  bool nccl_found = false; // false: libnccl.so.2 is not in the dynamic linker's path
  int unique_id_result = -1;
  int version = 0;
  std::string log;                                       // NCCL_DEBUG_FILE contents
  std::map<std::string, std::optional<std::string>> env; // the asked names after NCCL ran
};

// Runs ncclGetUniqueId in a forked child with only NCCL_CONF_FILE=`conf` (and `env`) set among
// NCCL_* variables, so NCCL's once-per-process env loading starts fresh and the caller never
// loads NCCL; reports `names` as NCCL left them in the environment. `work_dir` holds the log and
// the child's answer. An error when the child failed (a hung NCCL is killed after 60 s).
Result<NcclRun> runNcclGetUniqueId(const std::filesystem::path& work_dir,
                                   const std::filesystem::path& conf, const NcclEnv& env,
                                   const std::vector<std::string>& names);

} // namespace kube_rdma
