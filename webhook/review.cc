#include "webhook/review.h"

#include <utility>

#include "webhook/admission_codec.h"
#include "webhook/mutator.h"

namespace kube_rdma {

ReviewOutcome reviewAdmission(std::string_view body, const WebhookPolicy& policy) {
  ReviewOutcome outcome;
  Result<AdmissionRequest> request = decodeAdmissionReview(body);
  if (!request.ok()) {
    outcome.http_status = 400;
    outcome.outcome = "bad_request";
    outcome.body = request.error().message;
    return outcome;
  }
  outcome.uid = request->uid;
  outcome.pod = request->ns + "/" + request->name;
  AdmissionResponse response{request->uid, nlohmann::json::array(), {}};
  const bool pod_create = request->operation == "CREATE" && request->group.empty() &&
                          request->kind == "Pod" && request->sub_resource.empty() &&
                          request->object.is_object();
  if (!pod_create) {
    outcome.outcome = "ignored";
  } else {
    MutationResult mutation = mutatePod(request->object, request->ns, policy);
    outcome.outcome = !mutation.skipped.empty() ? "skipped"
                      : mutation.patch.empty()  ? "unchanged"
                                                : "mutated";
    outcome.skipped = std::move(mutation.skipped);
    outcome.applied = std::move(mutation.applied);
    response.patch = std::move(mutation.patch);
    response.warnings = mutation.warnings;
    outcome.warnings = std::move(mutation.warnings);
  }
  outcome.body = encodeAdmissionReview(request->version, response);
  return outcome;
}

} // namespace kube_rdma
