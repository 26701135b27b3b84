#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/pools/nccl_settings.h"
#include "common/util/result.h"

// Hands an nccl.conf to the real libnccl.so.2 and reads back what NCCL did with it: its own INFO
// log and the environment it set. ncclGetUniqueId needs no GPU. Used by the libnccl tests and the
// demo. The library is the file KUBE_RDMA_LIBNCCL names when that is set and not empty
// (scripts/test.sh and scripts/demo.sh name the NCCL 2.28 that scripts/setup.sh installs from
// PyPI's nvidia-nccl-cu13 wheel), else libnccl.so.2 from the dynamic linker's path.
namespace kube_rdma {

inline constexpr const char* kLibncclVariable = "KUBE_RDMA_LIBNCCL";

struct NcclRun {
  bool nccl_found = false; // false: the library could not be loaded, `load_error` says why
  std::string load_error;  // dlerror()'s text, or which NCCL function the library lacks
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
