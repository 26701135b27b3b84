#include "webhook/admission_codec.h"

#include <openssl/evp.h>

#include "common/json_depth.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

constexpr const char* kV1 = "admission.k8s.io/v1";
constexpr const char* kV1beta1 = "admission.k8s.io/v1beta1";

Result<json> parseBody(std::string_view body) {
  if (jsonNestsDeeperThan(body, kMaxJsonDepth)) {
    return makeError("body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    // The message names the position, then the reason, then the token read: the token can be a
    // whole unterminated megabyte string, so it is left out.
    std::string_view what = e.what();
    what = what.substr(0, what.find("; last read"));
    what = what.substr(what.find(": ") == std::string_view::npos ? 0 : what.find(": ") + 2);
    const size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, body.size());
    return makeError("body not JSON at offset " + std::to_string(offset) + " of " +
                     std::to_string(body.size()) + ": " + std::string(what));
  } catch (const json::exception& e) { // a number too large for a double, quoted whole: cut
    return makeError("body not JSON: " + std::string(e.what()).substr(0, 120));
  }
}

std::string stringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Invalid UTF-8 (a pod's strings echoed in a warning) is replaced instead of throwing.
std::string text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
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

Result<AdmissionRequest> decodeAdmissionReview(std::string_view body) {
  Result<json> parsed = parseBody(body);
  if (!parsed.ok()) {
    return parsed.error();
  }
  json& review = *parsed;
  if (!review.is_object()) {
    return makeError("body is not an AdmissionReview: not a JSON object");
  }
  AdmissionRequest request;
  const std::string api_version = stringField(review, "apiVersion");
  if (api_version == kV1) {
    request.version = ReviewVersion::kV1;
  } else if (api_version == kV1beta1) {
    request.version = ReviewVersion::kV1beta1;
  } else {
    return makeError("apiVersion must be admission.k8s.io/v1 or v1beta1, got " +
                     json(api_version).dump());
  }
  if (stringField(review, "kind") != "AdmissionReview") {
    return makeError("kind must be AdmissionReview, got " +
                     json(stringField(review, "kind")).dump());
  }
  auto in = review.find("request");
  if (in == review.end() || !in->is_object()) {
    return makeError("AdmissionReview has no request object");
  }
  request.uid = stringField(*in, "uid");
  if (request.uid.empty()) {
    return makeError("request.uid is missing");
  }
  request.operation = stringField(*in, "operation");
  if (auto kind = in->find("kind"); kind != in->end() && kind->is_object()) {
    request.group = stringField(*kind, "group");
    request.kind = stringField(*kind, "kind");
  }
  request.sub_resource = stringField(*in, "subResource");
  request.ns = stringField(*in, "namespace");
  request.name = stringField(*in, "name");
  if (auto object = in->find("object"); object != in->end()) {
    request.object = std::move(*object);
  }
  return request;
}

std::string encodeAdmissionReview(ReviewVersion version, const AdmissionResponse& response) {
  json out = {{"allowed", true}, {"uid", response.uid}};
  // patchType only together with a non-empty patch: the API server rejects either alone.
  if (response.patch.is_array() && !response.patch.empty()) {
    out["patch"] = base64(text(response.patch));
    out["patchType"] = "JSONPatch";
  }
  if (!response.warnings.empty()) {
    json& warnings = out["warnings"] = json::array();
    for (const std::string& warning : response.warnings) {
      warnings.push_back(truncateWarning(warning));
    }
  }
  return text({{"apiVersion", version == ReviewVersion::kV1 ? kV1 : kV1beta1},
               {"kind", "AdmissionReview"},
               {"response", std::move(out)}});
}

} // namespace kube_rdma
