// AdmissionReviews for a pod CREATE in the shape the API server sends them, and the standard
// base64 the webhook's patches come back in: shared by the webhook tests, the fault tests and
// the fuzz target.
#pragma once

#include <openssl/evp.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

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

// Padded standard base64; nullopt when `text` is not that.
inline std::optional<std::string> decodeBase64(const std::string& text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) {
    return std::nullopt;
  }
  // EVP_DecodeBlock counts the '=' padding as zero bytes.
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && size > 0; --i) {
    --size;
  }
  out.resize(size);
  return out;
}

} // namespace kube_rdma::test_support
