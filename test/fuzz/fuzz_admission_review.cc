// AdmissionReview handling end to end (decode, mutate, encode), as the API server's bytes arrive:
// every input gets an answer (200 or 400, never an exception); a 200 for a pod CREATE carries a
// patch that applies to the pod it came from; the patched pod sent again gets no patch.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "webhook/policy.h"
#include "test/fuzz/fuzz_check.h"
#include "test/webhook/admission_test_support.h"
#include "webhook/mutator.h"
#include "webhook/review.h"

using namespace kube_rdma;
using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const WebhookPolicy policy = defaultWebhookPolicy();
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const ReviewOutcome outcome = reviewAdmission(body, policy);
  FUZZ_CHECK(outcome.http_status == 200 || outcome.http_status == 400, "answer is 200 or 400");
  if (outcome.http_status != 200) {
    FUZZ_CHECK(!outcome.body.empty(), "a 400 says why");
    return 0;
  }
  const json reply = json::parse(outcome.body); // our own output must be JSON
  const json& response = reply.at("response");
  FUZZ_CHECK(response.at("allowed").get<bool>(), "the webhook never denies");
  if (!response.contains("patch")) {
    FUZZ_CHECK(!response.contains("patchType"), "patchType only together with a patch");
    return 0;
  }
  FUZZ_CHECK(response.at("patchType") == "JSONPatch", "patchType is JSONPatch");
  const auto decoded = test_support::decodeBase64(response.at("patch").get<std::string>());
  FUZZ_CHECK(decoded.has_value(), "the patch is valid base64");
  const json patch = json::parse(*decoded);
  FUZZ_CHECK(patch.is_array() && !patch.empty(), "a patch is a non-empty array");

  const json request = json::parse(body).at("request");
  const json& pod = request.at("object");
  json patched;
  try {
    patched = pod.patch(patch);
  } catch (const json::exception& e) {
    FUZZ_CHECK(false, "the patch applies to the pod it came from");
  }
  const std::string ns = request.value("namespace", "");
  FUZZ_CHECK(test_support::mutateJsonPod(patched, ns, policy).patch.empty(),
             "a second pass is empty");
  return 0;
}
