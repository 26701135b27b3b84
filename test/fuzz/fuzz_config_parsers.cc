// The plugin config and the webhook policy: any bytes give a config or an error naming where
// the problem is ("$..."), never an exception or a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/pools/plugin_config.h"
#include "webhook/policy.h"
#include "test/fuzz/fuzz_check.h"

using namespace kube_rdma;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto config = parsePluginConfig(text);
  if (!config.ok()) {
    FUZZ_CHECK(!config.error().message.empty(), "a rejected config says why");
  }
  const auto policy = parseWebhookPolicy(text);
  if (!policy.ok()) {
    FUZZ_CHECK(!policy.error().message.empty(), "a rejected policy says why");
  }
  return 0;
}
