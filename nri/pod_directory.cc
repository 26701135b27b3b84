#include "nri/pod_directory.h"

namespace kube_rdma {

void PodDirectory::remember(const std::string& pod_namespace, const std::string& name,
                            const std::string& uid) {
  if (uid.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Key key{pod_namespace, name};
  if (const auto it = uids_.find(key); it != uids_.end()) {
    by_age_.erase(it->second.second);
  }
  uids_[key] = {uid, next_};
  by_age_.emplace(next_++, std::move(key));
  if (uids_.size() > kCapacity) {
    uids_.erase(by_age_.begin()->second);
    by_age_.erase(by_age_.begin());
  }
}

std::string PodDirectory::uid(const std::string& pod_namespace, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = uids_.find({pod_namespace, name});
  return it == uids_.end() ? "" : it->second.first;
}

} // namespace kube_rdma
