#include "kubeclient/api_error.h"

#include <algorithm>

#include "common/util/json_depth.h"
#include "common/util/json_members.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

constexpr size_t kQuotedBodyBytes = 200;
// Kubernetes objects nest a few dozen levels at most.
constexpr int kMaxJsonDepth = 100;

std::string quotedExcerpt(std::string_view text) {
  std::string out = "'" + std::string(text.substr(0, kQuotedBodyBytes));
  return out + (text.size() > kQuotedBodyBytes ? "...'" : "'");
}

} // namespace

ApiError errorFromStatus(const nlohmann::json& status, int fallback_code) {
  ApiError error{fallback_code, "", ""};
  if (!status.is_object()) {
    error.message = "error without a Status object: " + status.dump();
    return error;
  }
  if (const auto code = status.find("code"); code != status.end() && code->is_number_integer()) {
    error.code = code->get<int>();
  }
  error.reason = jsonStringMember(status, "reason");
  const nlohmann::json* message = jsonMember(status, "message");
  error.message = message != nullptr && message->is_string()
                      ? message->get<std::string>()
                      : "Status without a message: " + status.dump();
  return error;
}

ApiResult<nlohmann::json> parseApiJson(std::string_view text, int code, std::string_view what) {
  if (jsonNestsDeeperThan(text, kMaxJsonDepth)) {
    return ApiError{code, "",
                    std::string(what) + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels: not an API object"};
  }
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return ApiError{code, "", std::string(what) + " is not JSON: " + quotedExcerpt(text)};
  }
  return parsed;
}

ApiError errorFromAnswer(int http_status, std::string_view body) {
  const ApiResult<nlohmann::json> parsed = parseApiJson(body, http_status, "answer");
  if (parsed && jsonStringMember(*parsed, "kind") == "Status") {
    ApiError error = errorFromStatus(*parsed, http_status);
    error.code = http_status; // the status line is what happened; Status.code only repeats it
    return error;
  }
  return ApiError{http_status, "",
                  body.empty() ? "empty answer, not a Status"
                               : "answer is not a Status: " + quotedExcerpt(body)};
}

std::string describe(const ApiError& error) {
  if (error.code == 0) {
    return error.message;
  }
  std::string text = "HTTP " + std::to_string(error.code);
  if (!error.reason.empty()) {
    text += " " + error.reason;
  }
  return text + ": " + error.message;
}

Error toError(const ApiError& error) {
  return makeError(describe(error));
}

std::chrono::seconds parseRetryAfter(std::string_view header) {
  constexpr unsigned long long kMaxSeconds = 600;
  const std::optional<unsigned long long> seconds = parseWhole<unsigned long long>(header);
  if (header.size() > 10 || !seconds) {
    return std::chrono::seconds(0);
  }
  return std::chrono::seconds(std::min(*seconds, kMaxSeconds));
}

} // namespace kube_rdma
