#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/util/atomic_file.h"
#include "common/util/result.h"

namespace kube_rdma {

// The plugin's files under --state-dir: topology.json and nccl.conf files named after their
// content ("nccl-<64-bit FNV-1a, 16 hex digits>.conf"), so an allocation's mount never changes
// under a running container and identical settings share one file.
class StateWriter {
public:
  explicit StateWriter(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  Status prepare() const;
  Status writeTopology(const std::string& json) const;
  /** @return the host path of the nccl.conf holding `content`. */
  Result<std::string> writeNcclConf(const std::string& content) const;

private:
  const std::string state_dir_;
};

// 64-bit FNV-1a. Not cryptographic, and need not be: the plugin renders every content it names,
// nobody can choose one to collide, and it keeps libcrypto out of the daemon.
uint64_t fnv1a64(std::string_view data);

// "nccl-" + fnv1a64(content) as 16 lower-case hex digits + ".conf".
std::string ncclConfFileName(const std::string& content);

} // namespace kube_rdma
