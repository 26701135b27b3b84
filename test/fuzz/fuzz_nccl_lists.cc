// NCCL_IB_HCA / NCCL_SOCKET_IFNAME parsing and nccl.conf: never crash, and what we render reads
// back as what we meant.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/pools/nccl_settings.h"
#include "test/fuzz/fuzz_check.h"

using namespace kube_rdma;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const NcclDeviceList hca = parseNcclIbHca(text);
  FUZZ_CHECK(hca.entries.size() <= kNcclIbHcaMaxEntries, "NCCL_IB_HCA keeps at most 32 entries");
  for (const auto& entry : hca.entries) {
    // An entry always matches its own name and port under exact matching.
    NcclDeviceList exact{false, false, true, {entry}, {}, {}};
    FUZZ_CHECK(matches(exact, entry.name, entry.port), "an exact entry matches itself");
  }
  const NcclDeviceList ifname = parseNcclSocketIfname(text);
  FUZZ_CHECK(!ifname.ignored || text.size() <= 1, "only values of length <= 1 are ignored");

  // nccl.conf: parse whatever came in, render what parsed cleanly, parse again: same settings.
  const NcclEnv parsed = parseNcclConf(text);
  const auto rendered = renderNcclConf(parsed);
  if (rendered.ok()) {
    FUZZ_CHECK(parseNcclConf(*rendered) == parsed, "renderNcclConf output reads back the same");
  }
  return 0;
}
