#include "common/memlock.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "common/strings.h"

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

Result<OciState> parseOciState(std::string_view state_json) {
  // A runtime's state is a few levels deep; anything deeper is not one, and is not built.
  constexpr int kMaxStateDepth = 16;
  if (jsonNestsDeeperThan(state_json, kMaxStateDepth)) {
    return makeError("the OCI state nests deeper than " + std::to_string(kMaxStateDepth) +
                     " levels");
  }
  const auto doc = nlohmann::json::parse(state_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return makeError("the OCI state is not JSON");
  }
  if (!doc.is_object()) {
    return makeError("the OCI state is not a JSON object");
  }
  const auto pid = doc.find("pid");
  if (pid == doc.end()) {
    return makeError("the OCI state has no pid");
  }
  if (!pid->is_number_integer()) {
    return makeError(std::string("the OCI state's pid is of type ") + pid->type_name() +
                     ", not an integer");
  }
  const int64_t value = pid->get<int64_t>(); // an unsigned above INT64_MAX comes out negative
  if (value <= 0 || value > std::numeric_limits<pid_t>::max()) {
    return makeError("the OCI state's pid " + pid->dump() + " is not a process ID");
  }
  OciState state;
  state.pid = static_cast<pid_t>(value);
  if (const auto id = doc.find("id"); id != doc.end() && id->is_string()) {
    state.id = id->get<std::string>();
  }
  return state;
}

} // namespace kube_rdma
