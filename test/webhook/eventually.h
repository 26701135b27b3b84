#pragma once

#include <chrono>
#include <thread>

namespace kube_rdma {

// Polls a condition that other threads make true. The bound (30 s) only ends a broken test; it
// is far above what any step takes, even on a loaded machine.
template <class F> bool eventually(F condition) {
  using namespace std::chrono_literals;
  for (int i = 0; i < 6000; ++i) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

} // namespace kube_rdma
