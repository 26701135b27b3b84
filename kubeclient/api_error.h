#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "common/util/result.h"

// What a call to the Kubernetes API server can fail with. docs/kubeclient.md "Errors".
namespace kube_rdma {

struct ApiError {
  // The HTTP status of the answer; 0 when there was none (no connection, TLS refused, timeout).
  int code = 0;
  // The Status object's `reason` (NotFound, Conflict, AlreadyExists, Expired, Forbidden, ...);
  // empty when the answer carried no Status.
  std::string reason;
  // The Status object's `message` verbatim (it names the object and the rule that refused it),
  // or what went wrong on our side.
  std::string message;
  // The answer's Retry-After (429 and 503 carry one: how long the server asks callers to wait);
  // 0 when it had none.
  std::chrono::seconds retry_after{0};
};

template <class T> using ApiResult = Result<T, ApiError>;

// The error an answer with a non-2xx `http_status` and `body` stands for. A Status body gives its
// reason and message; any other body (HTML from a proxy, bad JSON, nothing) is quoted, cut short,
// so the operator sees what came back.
ApiError errorFromAnswer(int http_status, std::string_view body);

// The error a Status object stands for (a watch's ERROR event carries one). `fallback_code` when
// the object has no `code`.
ApiError errorFromStatus(const nlohmann::json& status, int fallback_code);

// A Retry-After header's delay-seconds; 0 for anything else (an HTTP date, garbage, nothing).
// Capped at 10 minutes: a broken proxy must not park a daemon for a day.
std::chrono::seconds parseRetryAfter(std::string_view header);

// "HTTP 409 Conflict: <message>" or "<message>" when there was no answer: for logs and for the
// plain Error that callers outside the API layer pass on.
std::string describe(const ApiError& error);
Error toError(const ApiError& error);

// The JSON of an answer or watch line; bad or absurdly nested JSON is an error naming `what`,
// with `code` (the answer's HTTP status), never an exception.
ApiResult<nlohmann::json> parseApiJson(std::string_view text, int code, std::string_view what);

} // namespace kube_rdma
