// AdmissionReviews for a pod CREATE in the shape the API server sends them, and the standard
// base64 the webhook's patches come back in: shared by the webhook tests, the fault tests and
// the fuzz target.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <simdjson.h>
#include <string>
#include <vector>

#include "kubeclient/kubeconfig.h"
#include "webhook/mutator.h"

namespace kube_rdma::test_support {

inline nlohmann::json podCreateReview(const nlohmann::json& pod, const std::string& uid) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "training"},
            {"operation", "CREATE"},
            {"object", pod}}}};
}

// Padded standard base64 (OpenSSL's decoder, as kubeconfig data is read); nullopt when `text` is
// not that.
inline std::optional<std::string> decodeBase64(const std::string& text) {
  Result<std::string> decoded = kube_rdma::decodeBase64(text);
  return decoded ? std::optional<std::string>(std::move(*decoded)) : std::nullopt;
}

// A JSON value as the webhook reads it (simdjson's DOM), valid while this object lives.
class ParsedJson {
public:
  explicit ParsedJson(const nlohmann::json& value)
      : text_(value.dump()), root_(parser_.parse(text_).value()) {}
  ParsedJson(const ParsedJson&) = delete;
  ParsedJson& operator=(const ParsedJson&) = delete;
  simdjson::dom::element root() const { return root_; }

private:
  std::string text_;
  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
};

// mutatePod of a pod given as nlohmann-json, with the patch parsed back (an empty array when none).
struct JsonMutation {
  nlohmann::json patch;
  std::vector<std::string> warnings;
  std::set<std::string> applied;
  std::string skipped;
};
inline JsonMutation mutateJsonPod(const nlohmann::json& pod, const std::string& ns,
                                  const WebhookPolicy& policy, const PodRdmaClaims& claims = {}) {
  const ParsedJson parsed(pod);
  MutationResult result = mutatePod(parsed.root(), ns, policy, claims);
  return {result.patch.empty() ? nlohmann::json::array() : nlohmann::json::parse(result.patch),
          std::move(result.warnings), std::move(result.applied), std::move(result.skipped)};
}

} // namespace kube_rdma::test_support
