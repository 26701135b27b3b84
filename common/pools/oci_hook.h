#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/util/result.h"

// What kube-rdma's OCI hooks (kube-rdma-memlock-hook, kube-rdma-nccl-hook) read from the container
// runtime, and how they report. The static hooks link it: no libibverbs here. A hook must never
// make the runtime fail a container: these return errors, the hooks log them and exit 0.
namespace kube_rdma {

// What a hook needs of the OCI state document on its stdin (runtime-spec "State").
struct OciState {
  pid_t pid = 0;      // the container's process, in the hook's PID namespace
  std::string id;     // the container ID, for the log; may be empty
  std::string bundle; // the bundle directory (holds config.json); may be empty
};

// A JSON object with a positive integer `pid`, else an error saying what the document lacks.
// Never throws, whatever the text.
Result<OciState> parseOciState(std::string_view state_json);

class Logger;

// The state a hook acts on, or nullopt after logging why there is none: a bad argument
// (`problem` not empty), no state on stdin, or a bad one. Each message ends in `unchanged`
// ("memlock left alone"), what the container keeps.
std::optional<OciState> readHookInput(Logger& log, const std::string& problem,
                                      const std::string& unchanged);

// A hook's log `text`, on stderr (which runc drops when the hook succeeds) and appended to the
// log file at `path` unless it is empty, first moving a file of 1 MiB or more to PATH.1. Hooks of
// containers starting together append at once: each run is one write() of O_APPEND. A failure to
// write it is reported on stderr, prefixed with `program`.
void reportHookRun(const std::string& text, const std::string& path, const char* program);

// What kube-rdma-nccl-hook needs of the container's OCI spec (the bundle's config.json).
struct ContainerSpec {
  std::string rootfs;                 // absolute: root.path, resolved against the bundle
  std::vector<std::string> env;       // process.env, "NAME=VALUE"
  bool own_network_namespace = false; // linux.namespaces has a "network" entry
  std::vector<std::pair<std::string, std::string>> mounts; // destination -> source, in order
  std::string pod; // "namespace/name" from the CRI runtime's annotations; empty if none
  // The NCCL_IB_GID_INDEX kube-rdma's NRI plugin put into the environment, from its annotation:
  // the container's own, not the user's. Empty if none.
  std::string nri_gid_index;
};

// Set by the NRI plugin beside the NCCL_IB_GID_INDEX it adds to a container's environment.
inline constexpr const char* kNriGidIndexAnnotation = "rdma.kube-rdma.io/nri-nccl-ib-gid-index";

// Errors name what is missing or of the wrong type; never throws.
Result<ContainerSpec> parseContainerSpec(std::string_view config_json, const std::string& bundle);

// The value of NAME in `env` ("NAME=VALUE" entries; the first one, which getenv() finds), or
// nullopt when it is not set. A set empty value is "" (NCCL reads it as unset, and it still hides
// the variable's nccl.conf line).
std::optional<std::string> envValue(const std::vector<std::string>& env, std::string_view name);

} // namespace kube_rdma
