#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/util/clock.h"
#include "common/node/device_model.h"
#include "common/labels/nfd_features.h"
#include "common/util/result.h"

namespace kube_rdma {

// A judgement kept current, gpuDirectReady() (node_snapshot.h) in the daemons: made again when the
// node's GPUs change (the verdict depends on the topology only through them, not on the port
// states that change the daemons' topology often) and, since the GPU operator loads nvidia_peermem
// minutes after the daemons start, once per `interval` in between (not at every health sample:
// the snapshot reads dozens of files). One thread calls it.
class GpuDirectReadiness {
public:
  using Judge = std::function<bool(const NodeTopology&)>;

  GpuDirectReadiness(Judge judge, std::chrono::seconds interval, ClockPtr clock)
      : judge_(std::move(judge)), interval_(interval), clock_(std::move(clock)) {}

  bool ready(const NodeTopology& topology);
  // When ready() judges again if the GPUs stay the same.
  std::chrono::steady_clock::time_point due() const { return due_; }

private:
  const Judge judge_;
  const std::chrono::seconds interval_;
  const ClockPtr clock_;
  std::optional<std::vector<GpuDevice>> judged_gpus_;
  bool ready_ = false;
  std::chrono::steady_clock::time_point due_{};
};

// How often the daemons judge GPUDirect again: each time they refresh NFD's file (half its
// lifetime), and at least once a minute, NFD's own reading interval.
std::chrono::seconds gpuDirectRecheckInterval(std::chrono::seconds nfd_features_ttl);

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
