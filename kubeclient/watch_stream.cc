#include "kubeclient/watch_stream.h"

#include "common/util/json_members.h"

namespace kube_rdma {

bool WatchLineBuffer::nextLine(std::string& line) {
  const size_t newline = pending_.find('\n');
  if (newline == std::string::npos) {
    return false;
  }
  line.assign(pending_, 0, newline);
  pending_.erase(0, newline + 1);
  return true;
}

ApiResult<WatchEvent> parseWatchEvent(std::string_view line) {
  const ApiResult<nlohmann::json> parsed = parseApiJson(line, 0, "watch event");
  if (!parsed) {
    return parsed.error();
  }
  const nlohmann::json& event = *parsed;
  const auto type = event.is_object() ? event.find("type") : event.end();
  if (type == event.end() || !type->is_string() || !event.contains("object") ||
      !event["object"].is_object()) {
    return ApiError{
        0, "", "watch: not an event {type, object}: '" + std::string(line.substr(0, 200)) + "'"};
  }
  return WatchEvent{type->get<std::string>(), event["object"]};
}

std::string resourceVersionOf(const nlohmann::json& object) {
  return metadataString(object, "resourceVersion");
}

} // namespace kube_rdma
