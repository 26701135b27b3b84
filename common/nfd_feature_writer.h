#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/device_model.h"
#include "common/nfd_features.h"
#include "common/node_snapshot.h"
#include "common/result.h"

namespace kube_rdma {

// The kube-rdma.io/gpudirect-rdma label: the node has NVIDIA GPUs and `rdmactl doctor`'s GPUDirect
// check (checkGpuDirect: nvidia_peermem or nv_peer_mem loaded, or dma-buf possible) passes on the
// files under `roots` as they are now. It reads those files and more (a NodeSnapshot): call it when
// the topology or the configuration changes, not at every health sample.
bool gpuDirectReady(const NodeTopology& topology, const SnapshotRoots& roots);
// The same from a snapshot already read.
bool gpuDirectReady(const NodeTopology& topology, const NodeSnapshot& snapshot);

// Keeps NFD's feature file (--nfd-features-file) current: written when the labels change and
// again half-way through its lifetime, so NFD never sees it expire while the daemon runs, and
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
