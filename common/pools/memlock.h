#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/util/result.h"

// The locked-memory limit that kube-rdma-memlock-hook gives every RDMA container
// (docs/memlock.md). The static hook links it: no libibverbs here.
namespace kube_rdma {

struct MemlockLimit {
  enum class Mode {
    kOff,       // no hook in the CDI spec: the runtime's RLIMIT_MEMLOCK stays
    kUnlimited, // RLIM_INFINITY
    kBytes,
  };
  Mode mode = Mode::kUnlimited;
  uint64_t bytes = 0; // kBytes only
  bool operator==(const MemlockLimit&) const = default;
};

// Below this a byte count is surely a typo (64 KiB is the kernel's own default).
constexpr uint64_t kMinMemlockBytes = 65536;

// "unlimited", "off" or a decimal byte count of at least kMinMemlockBytes: the hook's --memlock.
Result<MemlockLimit> parseMemlockLimit(std::string_view text);
// The inverse: "unlimited", "off" or the byte count.
std::string memlockLimitText(const MemlockLimit& limit);

} // namespace kube_rdma
