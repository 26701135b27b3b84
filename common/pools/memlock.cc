#include "common/pools/memlock.h"

#include "common/util/strings.h"

namespace kube_rdma {

Result<MemlockLimit> parseMemlockLimit(std::string_view text) {
  if (text == "unlimited") {
    return MemlockLimit{};
  }
  if (text == "off") {
    return MemlockLimit{MemlockLimit::Mode::kOff};
  }
  const auto bytes = parseWhole<uint64_t>(text);
  if (!bytes) {
    return makeError("expected \"unlimited\", \"off\" or a byte count, got \"" + std::string(text) +
                     "\"");
  }
  if (*bytes < kMinMemlockBytes) {
    return makeError("a byte count must be at least " + std::to_string(kMinMemlockBytes) +
                     ", got " + std::string(text));
  }
  return MemlockLimit{MemlockLimit::Mode::kBytes, *bytes};
}

std::string memlockLimitText(const MemlockLimit& limit) {
  switch (limit.mode) {
  case MemlockLimit::Mode::kOff:
    return "off";
  case MemlockLimit::Mode::kUnlimited:
    return "unlimited";
  case MemlockLimit::Mode::kBytes:
    break;
  }
  return std::to_string(limit.bytes);
}

} // namespace kube_rdma
