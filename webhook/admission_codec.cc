#include "webhook/admission_codec.h"

#include <openssl/evp.h>

namespace kube_rdma {
namespace {

using nlohmann::json;

constexpr const char* kV1 = "admission.k8s.io/v1";
constexpr const char* kV1beta1 = "admission.k8s.io/v1beta1";

std::string stringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
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

// Whether `body` nests arrays/objects deeper than `limit` (brackets inside strings not counted).
bool nestedDeeperThan(std::string_view body, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) {
        return true;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

} // namespace

Result<AdmissionRequest> decodeAdmissionReview(std::string_view body) {
  // nlohmann builds a DOM of any depth, ~75 bytes of heap per byte of "[[[[..." (6 MiB of it took
  // 460 MiB). A pod's JSON is a few dozen levels deep at most.
  if (nestedDeeperThan(body, kMaxJsonDepth)) {
    return makeError("body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  json review = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) {
    return makeError("body is not JSON");
  }
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
  if (auto object = in->find("object"); object != in->end()) {
    request.object = std::move(*object);
  }
  return request;
}

std::string encodeAdmissionReview(ReviewVersion version, const AdmissionResponse& response) {
  json out = {{"uid", response.uid}, {"allowed", true}};
  // patchType only together with a non-empty patch: the API server rejects either alone.
  if (response.patch.is_array() && !response.patch.empty()) {
    out["patchType"] = "JSONPatch";
    out["patch"] = base64(response.patch.dump());
  }
  if (!response.warnings.empty()) {
    json& warnings = out["warnings"] = json::array();
    for (const std::string& w : response.warnings) {
      warnings.push_back(truncateWarning(w));
    }
  }
  const json review = {{"apiVersion", version == ReviewVersion::kV1 ? kV1 : kV1beta1},
                       {"kind", "AdmissionReview"},
                       {"response", std::move(out)}};
  // Replace invalid UTF-8 (a pod's strings echoed in a warning) instead of throwing.
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace kube_rdma
