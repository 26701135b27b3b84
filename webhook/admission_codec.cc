#include "webhook/admission_codec.h"

#include <openssl/evp.h>

#include "webhook/json_text.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

constexpr const char* kV1 = "admission.k8s.io/v1";
constexpr const char* kV1beta1 = "admission.k8s.io/v1beta1";

std::string stringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Appends the base64 of `bytes` to `out`.
void appendBase64(std::string_view bytes, std::string& out) {
  const size_t at = out.size();
  out.resize(at + 4 * ((bytes.size() + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + at),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(at + static_cast<size_t>(n));
}

// The patch as JSON text, in a buffer each thread reuses: texts of 1 KiB and more are the
// allocations that make glibc consolidate its fast bins, one per review. Capacity past 64 KiB (a
// patch of an unusually large pod) is given back.
std::string_view patchText(const json& patch) {
  thread_local std::string text;
  constexpr size_t kKeptCapacity = size_t{64} * 1024;
  if (text.capacity() > kKeptCapacity) {
    std::string().swap(text);
  }
  text.clear();
  appendJsonText(patch, text);
  return text;
}

// A JSON string literal; invalid UTF-8 (a pod's strings echoed in a warning) is replaced instead
// of throwing.
std::string jsonString(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
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

AdmissionDecoder::AdmissionDecoder(const JsonFilter& object)
    : review_({{"apiVersion", JsonFilter::whole()},
               {"kind", JsonFilter::whole()},
               {"request",
                {{"uid", JsonFilter::whole()},
                 {"operation", JsonFilter::whole()},
                 {"kind", {{"group", JsonFilter::whole()}, {"kind", JsonFilter::whole()}}},
                 {"subResource", JsonFilter::whole()},
                 {"namespace", JsonFilter::whole()},
                 {"name", JsonFilter::whole()},
                 {"object", object}}}}) {}

Result<AdmissionRequest> AdmissionDecoder::decode(std::string_view body) const {
  // The depth limit holds for dropped parts too: a DOM of "[[[[..." costs ~75 bytes of heap per
  // byte (6 MiB of it took 460 MiB), and a pod's JSON is a few dozen levels deep at most.
  Result<json> parsed = parseFiltered(body, review_, kMaxJsonDepth);
  if (!parsed.ok()) {
    return makeError("body " + parsed.error().message);
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
  // Written directly rather than as a DOM dump: the base64 patch is most of the reply and needs
  // no escaping. Members in the order nlohmann's std::map gave them, so replies are unchanged.
  // patchType only together with a non-empty patch: the API server rejects either alone.
  const bool patched = response.patch.is_array() && !response.patch.empty();
  const std::string_view text = patched ? patchText(response.patch) : std::string_view();
  std::string out;
  // One allocation for the reply when no string needs escaping: the base64 patch is most of it.
  out.reserve(128 + 4 * ((text.size() + 2) / 3) + response.uid.size() +
              response.warnings.size() * (kMaxWarningLength + 4));
  out += R"({"apiVersion":")";
  out += version == ReviewVersion::kV1 ? kV1 : kV1beta1;
  out += R"(","kind":"AdmissionReview","response":{"allowed":true)";
  if (patched) {
    out += R"(,"patch":")";
    appendBase64(text, out);
    out += R"(","patchType":"JSONPatch")";
  }
  out += R"(,"uid":)";
  out += jsonString(response.uid);
  if (!response.warnings.empty()) {
    out += R"(,"warnings":[)";
    for (size_t i = 0; i < response.warnings.size(); ++i) {
      out += (i == 0 ? "" : ",") + jsonString(truncateWarning(response.warnings[i]));
    }
    out += ']';
  }
  out += "}}";
  return out;
}

} // namespace kube_rdma
