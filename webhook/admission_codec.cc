#include "webhook/admission_codec.h"

#include <algorithm>

#include <openssl/evp.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "common/util/json_depth.h"
#include "webhook/json_text.h"
#include "webhook/pod_fields.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

constexpr const char* kV1 = "admission.k8s.io/v1";
constexpr const char* kV1beta1 = "admission.k8s.io/v1beta1";

namespace dom = simdjson::dom;

std::string tooDeep() {
  return "body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
}

// nlohmann-json's reason for rejecting `body`, with the offset; only on the error path, since
// simdjson names the kind of error but not where.
std::string notJsonReason(std::string_view body, simdjson::error_code code) {
  // nlohmann-json builds every level it reads: a body of '[' ending in a bad byte would cost
  // ~75 bytes of heap per byte before it found the error.
  if (jsonNestsDeeperThan(body, kMaxJsonDepth)) {
    return tooDeep();
  }
  try {
    [[maybe_unused]] const json parsed = json::parse(body);
  } catch (const json::parse_error& e) {
    // The message names the position, then the reason, then the token read: the token can be a
    // whole unterminated megabyte string, so it is left out.
    std::string_view what = e.what();
    what = what.substr(0, what.find("; last read"));
    what = what.substr(what.find(": ") == std::string_view::npos ? 0 : what.find(": ") + 2);
    const size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, body.size());
    return "body not JSON at offset " + std::to_string(offset) + " of " +
           std::to_string(body.size()) + ": " + std::string(what);
  } catch (const json::exception&) { // a number too large for a double: simdjson's reason
  }
  return "body not JSON: " + std::string(simdjson::error_message(code));
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string jsonString(std::string_view text) {
  std::string out;
  appendJsonString(out, text);
  return out;
}

std::string truncateWarning(const std::string& warning) {
  if (warning.size() <= kMaxWarningLength) {
    return warning;
  }
  // Cut on a UTF-8 character boundary, leaving room for the ellipsis.
  size_t cut = kMaxWarningLength - 3;
  while (cut > 0 && (static_cast<unsigned char>(warning[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return warning.substr(0, cut) + "...";
}

} // namespace

Result<AdmissionRequest> decodeAdmissionReview(std::string_view body, dom::parser& parser) {
  // simdjson checks the nesting as it builds the DOM, against a stack sized to the limit; the limit
  // is kept when the parser grows for a larger body.
  if (parser.max_depth() != kMaxJsonDepth) {
    if (const auto error = parser.allocate(body.size(), kMaxJsonDepth)) {
      return makeError("body not parsed: " + std::string(simdjson::error_message(error)));
    }
  }
  dom::element review;
  if (const auto error = parser.parse(body.data(), body.size()).get(review)) {
    return makeError(error == simdjson::DEPTH_ERROR ? tooDeep() : notJsonReason(body, error));
  }
  if (!review.is_object()) {
    return makeError("body is not an AdmissionReview: not a JSON object");
  }
  AdmissionRequest request;
  const std::string_view api_version = stringMember(review, "apiVersion");
  if (api_version == kV1) {
    request.version = ReviewVersion::kV1;
  } else if (api_version == kV1beta1) {
    request.version = ReviewVersion::kV1beta1;
  } else {
    return makeError("apiVersion must be admission.k8s.io/v1 or v1beta1, got " +
                     jsonString(api_version));
  }
  if (stringMember(review, "kind") != "AdmissionReview") {
    return makeError("kind must be AdmissionReview, got " +
                     jsonString(stringMember(review, "kind")));
  }
  JsonElement in;
  if (!member(review, "request", in) || !in.is_object()) {
    return makeError("AdmissionReview has no request object");
  }
  request.uid = stringMember(in, "uid");
  if (request.uid.empty()) {
    return makeError("request.uid is missing");
  }
  request.operation = stringMember(in, "operation");
  if (JsonElement kind; member(in, "kind", kind)) {
    request.group = stringMember(kind, "group");
    request.kind = stringMember(kind, "kind");
  }
  request.sub_resource = stringMember(in, "subResource");
  request.ns = stringMember(in, "namespace");
  request.name = stringMember(in, "name");
  request.has_object = member(in, "object", request.object);
  return request;
}

std::string encodeAdmissionReview(ReviewVersion version, const AdmissionResponse& response) {
  // Written as text, as the patch is; members in sorted order, as a JSON serializer would.
  std::string out = R"({"apiVersion":")";
  out += version == ReviewVersion::kV1 ? kV1 : kV1beta1;
  out += R"(","kind":"AdmissionReview","response":{"allowed":true)";
  // patchType only together with a non-empty patch: the API server rejects either alone.
  if (!response.patch.empty()) {
    out += R"(,"patch":")";
    out += base64(response.patch);
    out += R"(","patchType":"JSONPatch")";
  }
  out += R"(,"uid":)";
  appendJsonString(out, response.uid);
  if (!response.warnings.empty()) {
    out += R"(,"warnings":)";
    for (const std::string& warning : response.warnings) {
      out += out.back() == ':' ? '[' : ',';
      appendJsonString(out, truncateWarning(warning));
    }
    out += ']';
  }
  out += "}}";
  return out;
}

} // namespace kube_rdma
