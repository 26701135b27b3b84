#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

// The pods the runtime has told the NRI plugin of (at Synchronize, and with each container it
// creates), by namespace and name: their UIDs, which a Warning event on a pod needs and the
// kubelet's PodResources API does not give.
namespace kube_rdma {

// Bounded: past kCapacity the pod remembered longest ago is forgotten (a node runs a few hundred
// pods at most). Thread-safe.
class PodDirectory {
public:
  void remember(const std::string& pod_namespace, const std::string& name, const std::string& uid);
  // "" when the pod is not known.
  std::string uid(const std::string& pod_namespace, const std::string& name) const;

  static constexpr size_t kCapacity = 4096;

private:
  using Key = std::pair<std::string, std::string>;
  mutable std::mutex mutex_;
  std::map<Key, std::pair<std::string, uint64_t>> uids_; // uid, when remembered
  std::map<uint64_t, Key> by_age_;
  uint64_t next_ = 0;
};

} // namespace kube_rdma
