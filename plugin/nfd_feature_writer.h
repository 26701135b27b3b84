#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/nfd_features.h"
#include "common/result.h"

namespace kube_rdma {

// Whether a GPU peer-memory module is loaded, by the files NCCL itself looks for before it uses
// GPUDirect RDMA: kernel/mm/memory_peers/nv_mem/version, kernel/mm/memory_peers/nv_mem_nc/version
// (MLNX_OFED's nv_peer_mem) or module/nvidia_peermem/version, under `sysfs_root`. DMA-BUF, the
// other way, cannot be seen in sysfs. rdmactl doctor's GPUDirect check (issue 18, being written
// beside this) also judges DMA-BUF: once it is in common/, the label should use it instead.
bool gpuPeerMemoryLoaded(const std::string& sysfs_root);

// Keeps NFD's feature file (--nfd-features-file) current: written when the labels change and
// again half-way through its lifetime, so NFD never sees it expire while the plugin runs, and
// atomically (a dot file, which NFD skips, renamed in place). One thread calls it.
class NfdFeatureWriter {
public:
  /** @param ttl how long NFD may keep a written file's labels (its expiry-time is now + ttl). */
  NfdFeatureWriter(std::string path, std::chrono::seconds ttl, ClockPtr clock);

  // Writes when `labels` differ from the last ones written or when refreshDue() has come.
  // @return whether it wrote; an Error when writing failed (tried again when next due).
  Result<bool> update(const NodeLabels& labels);
  // When update() must be called again at the latest.
  std::chrono::steady_clock::time_point refreshDue() const { return due_; }
  const std::string& path() const { return path_; }

private:
  const std::string path_;
  const std::chrono::seconds ttl_;
  const ClockPtr clock_;
  std::optional<NodeLabels> written_;
  std::chrono::steady_clock::time_point due_{};
};

} // namespace kube_rdma
