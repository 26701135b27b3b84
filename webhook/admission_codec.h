#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "common/util/result.h"

// AdmissionReview admission.k8s.io/v1 and v1beta1 on the wire. Decoding never throws: a body that
// is not an AdmissionReview is an Error (the server answers 400 with its message).
namespace kube_rdma {

enum class ReviewVersion { kV1, kV1beta1 };

// The API server recommends at most 120 characters per warning; longer ones are cut.
inline constexpr size_t kMaxWarningLength = 120;

// Bodies nested deeper are refused (a pod is a few dozen levels deep at most).
inline constexpr int kMaxJsonDepth = 100;

struct AdmissionRequest {
  ReviewVersion version = ReviewVersion::kV1;
  std::string uid;
  std::string operation;    // CREATE, UPDATE, DELETE, CONNECT
  std::string group;        // request.kind.group, "" for the core group
  std::string kind;         // request.kind.kind, "Pod"
  std::string sub_resource; // "" for the object itself
  std::string ns;           // request.namespace
  std::string name;         // request.name; "" for a pod named from generateName
  // request.object where it was parsed; absent: has_object is false.
  bool has_object = false;
  simdjson::dom::element object;
};

// Errors: "body not JSON at offset N of M: ..." (syntax, invalid UTF-8, trailing bytes, a text
// that ends early), "body nests deeper than 100 levels", or what is missing or wrong. The request
// points into `parser`'s parse: it is valid until the parser's next parse or its end.
Result<AdmissionRequest> decodeAdmissionReview(std::string_view body,
                                               simdjson::dom::parser& parser);

struct AdmissionResponse {
  std::string uid;
  std::string patch; // RFC 6902 as JSON text; sent only when not empty
  std::vector<std::string> warnings;
};

// Always allowed: the webhook never rejects a pod. The reply is in the request's version.
std::string encodeAdmissionReview(ReviewVersion version, const AdmissionResponse& response);

} // namespace kube_rdma
