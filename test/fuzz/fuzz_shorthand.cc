// The kube-rdma.io/rdma annotation: never crash, never a silent 0, accepted values are canonical.
#include <cstddef>
#include <cstdint>
#include <string>

#include "webhook/shorthand.h"
#include "test/fuzz/fuzz_check.h"

using namespace kube_rdma;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto parsed = parseShorthand(text);
  if (!parsed.ok()) {
    FUZZ_CHECK(!parsed.error().message.empty(), "a rejected value says why");
    return 0;
  }
  FUZZ_CHECK(parsed->count >= 1 && parsed->count <= kMaxShorthandCount, "count in range");
  const std::string canonical =
      std::to_string(parsed->count) + (parsed->type.empty() ? "" : "(" + parsed->type + ")");
  const auto again = parseShorthand(canonical);
  FUZZ_CHECK(again.ok() && again->count == parsed->count && again->type == parsed->type,
             "the canonical form parses to the same request");
  const auto resolved = resolveShorthand(text, defaultShorthandMap());
  if (resolved.ok()) {
    FUZZ_CHECK(resolved->count == parsed->count && !resolved->resource.empty(),
               "resolution keeps the count and names a resource");
  }
  return 0;
}
