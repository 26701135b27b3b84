#pragma once

#include <string>

#include "common/result.h"

namespace kube_rdma {

// Writes `content` to `path` so that readers see the old file or the new one, never a part:
// a temporary file in the same directory, fsync, rename over `path`, fsync the directory.
Status writeFileAtomically(const std::string& path, const std::string& content);

// The plugin's files under --state-dir: topology.json and nccl.conf files named after their
// content ("nccl-<sha256 prefix>.conf"), so an allocation's mount never changes under a running
// container and identical settings share one file.
class StateWriter {
public:
  explicit StateWriter(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  Status prepare() const; // creates the directory
  Status writeTopology(const std::string& json) const;
  /** @return the host path of the nccl.conf holding `content`. */
  Result<std::string> writeNcclConf(const std::string& content) const;

  const std::string& dir() const { return state_dir_; }

private:
  const std::string state_dir_;
};

// "nccl-" + the first 16 hex digits of the content's SHA-256 + ".conf".
std::string ncclConfFileName(const std::string& content);

} // namespace kube_rdma
