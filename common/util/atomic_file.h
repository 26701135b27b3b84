#pragma once

#include <string>

#include "common/util/result.h"

// File writes that never leave a half-written file behind: the daemons' state and the CDI specs
// the container runtime reads at any moment.
namespace kube_rdma {

// Writes `content` to `path` so that readers see the old file or the new one, never a part:
// a temporary dot file in the same directory, fsync, rename over `path`, fsync the directory.
// The file is mode 0644: containers mount some of them.
Status writeFileAtomically(const std::string& path, const std::string& content);

// Removes `path`; a file that is not there is not an error.
Status removeFileIfPresent(const std::string& path);

} // namespace kube_rdma
