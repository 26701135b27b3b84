#include "webhook/review.h"

#include <utility>

#include "webhook/admission_codec.h"
#include "webhook/mutator.h"
#include "webhook/pod_fields.h"

namespace kube_rdma {
namespace {

// The RDMA requests of each claim the pod uses; a claim that cannot be read counts as none, with
// a warning (the webhook's failure policy is Ignore: it never holds a pod up).
PodRdmaClaims readPodClaims(JsonElement pod, const std::string& ns, const WebhookPolicy& policy,
                            const ClaimSpecLookup& read_claim, std::vector<std::string>& warnings) {
  PodRdmaClaims claims;
  if (policy.dra_device_classes.empty() || !podSkipReason(pod, ns, policy).empty()) {
    return claims;
  }
  for (const PodClaimSource& source : podClaimSources(pod)) {
    const std::string what = source.claim_name.empty()
                                 ? "ResourceClaimTemplate " + source.template_name
                                 : "ResourceClaim " + source.claim_name;
    if (!read_claim) {
      warnings.push_back("claim " + source.name + " not checked for RDMA: no API access");
      continue;
    }
    Result<std::vector<ClaimRequest>> requests = read_claim(podNamespace(pod, ns), source);
    if (!requests.ok()) {
      warnings.push_back(what + " not read: " + requests.error().message);
      continue;
    }
    claims[source.name] = rdmaRequestNames(*requests, policy.dra_device_classes);
  }
  return claims;
}

} // namespace

ReviewOutcome reviewAdmission(std::string_view body, const WebhookPolicy& policy,
                              const ClaimSpecLookup& read_claim) {
  ReviewOutcome outcome;
  // A parser keeps its buffers (~14 bytes per byte of the largest body) for the next body on its
  // thread; a body larger than a pod's AdmissionReview gets a parser of its own, freed after.
  constexpr size_t kReusedCapacity = size_t{64} * 1024;
  thread_local simdjson::dom::parser reused;
  simdjson::dom::parser one_off;
  Result<AdmissionRequest> request =
      decodeAdmissionReview(body, body.size() <= kReusedCapacity ? reused : one_off);
  if (!request.ok()) {
    outcome.http_status = 400;
    outcome.outcome = "bad_request";
    outcome.body = request.error().message;
    return outcome;
  }
  outcome.uid = request->uid;
  outcome.pod = request->ns + "/" + request->name;
  AdmissionResponse response{request->uid, "", {}};
  const bool pod_create = request->operation == "CREATE" && request->group.empty() &&
                          request->kind == "Pod" && request->sub_resource.empty() &&
                          request->has_object && request->object.is_object();
  if (!pod_create) {
    outcome.outcome = "ignored";
  } else {
    std::vector<std::string> claim_warnings;
    const PodRdmaClaims claims =
        readPodClaims(request->object, request->ns, policy, read_claim, claim_warnings);
    MutationResult mutation = mutatePod(request->object, request->ns, policy, claims);
    mutation.warnings.insert(mutation.warnings.begin(), claim_warnings.begin(),
                             claim_warnings.end());
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
