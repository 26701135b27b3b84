#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <vector>

#include "plugin/resource_manager.h"

namespace kube_rdma {

// A pool's current device list with a version, and a way to wait for the next one. Publishing
// an identical list changes nothing; forceResend() bumps the version so every stream re-sends.
class DeviceListStore {
public:
  // @return whether the list changed (and streams were woken).
  bool publish(std::vector<PluginDevice> devices);
  void forceResend();
  // Ends every stream for good: the pool is gone.
  void close();

  DeviceList current() const;
  DeviceList waitForChange(uint64_t seen, std::chrono::milliseconds timeout,
                           std::stop_token stop) const;

private:
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
  DeviceList list_;
};

} // namespace kube_rdma
