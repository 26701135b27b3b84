#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/nccl_settings.h"

// The pure parts of the end-to-end demo: what a container's environment ends up as and who set
// each value, a line diff for the patched pod, and aligned text tables. No I/O here.
namespace kube_rdma {

// One variable of a container's final environment and the layer it came from
// (DESIGN.md "NCCL settings: who sets what").
struct EnvOrigin {
  std::string name;
  std::string value;
  std::string source; // "user", "policy", "node" or "nccl.conf"
  // Values of other layers that lost, as (source, value), e.g. ("node", "=mlx5_1:1,...").
  std::vector<std::pair<std::string, std::string>> shadowed;
};

// The container runtime builds the environment from the device plugin's Allocate envs first and
// the pod spec env after, the later value of a name winning; NCCL then reads nccl.conf without
// overwriting. `user` is the container's env as written, `patched` the env after the webhook's
// patch (user entries plus the policy's). Only names starting with `prefix` are returned, in
// name order.
std::vector<EnvOrigin> finalEnvironment(const NcclEnv& user, const NcclEnv& patched,
                                        const NcclEnv& node, const NcclEnv& nccl_conf,
                                        const std::string& prefix);

// A unified diff of two texts split in lines: hunks "@@ -a,b +c,d @@" with `context` unchanged
// lines around each change, lines prefixed by ' ', '+' or '-'. Empty when the texts are equal.
std::vector<std::string> unifiedDiff(const std::vector<std::string>& before,
                                     const std::vector<std::string>& after, size_t context);

std::vector<std::string> splitLines(const std::string& text);

// Rows under a header, each column as wide as its widest cell, two spaces apart, no trailing
// blanks; every line starts with `indent`.
std::string formatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::string& indent);

} // namespace kube_rdma
