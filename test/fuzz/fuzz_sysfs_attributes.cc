// Every sysfs attribute parser and the route tables: any bytes get a value or an error, and a GID
// that parses prints back in the kernel's form and parses to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/node/default_route.h"
#include "common/node/sysfs_attributes.h"
#include "test/fuzz/fuzz_check.h"

using namespace kube_rdma;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parsePortState(text);
  (void)parsePhysState(text);
  (void)parseLinkLayer(text);
  (void)parseRateGbps(text);
  (void)parseLid(text);
  (void)parseNumaNode(text);
  (void)parseGidType(text);
  const auto route = parseIpv4DefaultRoute(text);
  // An empty name is a table without a default route; a failure says why.
  FUZZ_CHECK(route.ok() || !route.error().message.empty(), "a rejected route table says why");
  (void)parseIpv6DefaultRoute(text);

  const auto gid = parseGid(text);
  if (gid.ok()) {
    const std::string printed = toKernelText(*gid);
    const auto again = parseGid(printed);
    FUZZ_CHECK(again.ok() && *again == *gid, "a parsed GID round-trips through the kernel form");
    if (ipv4Of(*gid).has_value()) {
      FUZZ_CHECK(!isZero(*gid) && !isLinkLocal(*gid),
                 "an IPv4-mapped GID is neither zero nor fe80");
    }
  }
  return 0;
}
