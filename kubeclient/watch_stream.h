#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "kubeclient/api_error.h"

namespace kube_rdma {

// One event of a watch: ADDED, MODIFIED, DELETED (the object as it was deleted), BOOKMARK (only
// a newer resourceVersion) or ERROR (a Status).
struct WatchEvent {
  std::string type;
  nlohmann::json object;
};

// A watch answer is a stream of JSON objects, one per line, cut into chunks anywhere.
class WatchLineBuffer {
public:
  void append(std::string_view chunk) { pending_.append(chunk); }
  // The next complete line, without its newline; false when none is complete yet.
  bool nextLine(std::string& line);

private:
  std::string pending_;
};

// One line of the stream as an event; an error naming what is wrong with it otherwise.
ApiResult<WatchEvent> parseWatchEvent(std::string_view line);

// The resourceVersion an event's object carries ("" when none).
std::string resourceVersionOf(const nlohmann::json& object);

} // namespace kube_rdma
