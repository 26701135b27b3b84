#include "plugin/device_list_store.h"

#include <utility>

namespace kube_rdma {

bool DeviceListStore::publish(std::vector<PluginDevice> devices) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (devices == list_.devices && list_.version != 0) {
      return false;
    }
    list_.devices = std::move(devices);
    ++list_.version;
  }
  changed_.notify_all();
  return true;
}

void DeviceListStore::forceResend() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++list_.version;
  }
  changed_.notify_all();
}

void DeviceListStore::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    list_.closed = true;
    ++list_.version;
  }
  changed_.notify_all();
}

DeviceList DeviceListStore::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return list_;
}

DeviceList DeviceListStore::waitForChange(uint64_t seen, std::chrono::milliseconds timeout,
                                          std::stop_token stop) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::move(stop), timeout,
                    [&] { return list_.version != seen || list_.closed; });
  return list_;
}

} // namespace kube_rdma
