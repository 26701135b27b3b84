#include "common/labels/nfd_feature_writer.h"

#include <algorithm>
#include <filesystem>

#include "common/util/atomic_file.h"

namespace kube_rdma {
namespace {

// After a failed write: soon, but not in a loop.
constexpr std::chrono::seconds kRetryAfterError(10);

} // namespace

bool GpuDirectReadiness::ready(const NodeTopology& topology) {
  const auto now = clock_->now();
  if (!judged_gpus_ || *judged_gpus_ != topology.gpus || now >= due_) {
    ready_ = judge_(topology);
    judged_gpus_ = topology.gpus;
    due_ = now + interval_;
  }
  return ready_;
}

std::chrono::seconds gpuDirectRecheckInterval(std::chrono::seconds nfd_features_ttl) {
  return std::clamp(nfd_features_ttl / 2, std::chrono::seconds(1), std::chrono::seconds(60));
}

NfdFeatureWriter::NfdFeatureWriter(std::string path, std::chrono::seconds ttl, ClockPtr clock)
    : path_(std::move(path)), ttl_(ttl), clock_(std::move(clock)) {}

Result<bool> NfdFeatureWriter::update(const NodeLabels& labels) {
  const auto now = clock_->now();
  if (written_ == labels && now < due_) {
    return false;
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  auto status = writeFileAtomically(path_, nfdFeatureFile(labels, clock_->wallNow() + ttl_));
  if (!status) {
    written_.reset();
    due_ = now + std::min(kRetryAfterError, ttl_ / 2);
    return status.error();
  }
  written_ = labels;
  due_ = now + ttl_ / 2;
  return true;
}

} // namespace kube_rdma
