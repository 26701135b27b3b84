#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/policy.h"
#include "webhook/dra_claims.h"

// One admission call from body to reply, without HTTP: decode, mutate pods on CREATE, encode.
namespace kube_rdma {

struct ReviewOutcome {
  int http_status = 200;
  std::string body; // the AdmissionReview reply, or the reason for a 400
  // For metrics: "mutated", "unchanged" (an RDMA-less pod or nothing missing), "skipped" (opted
  // out, mirror, namespace, bad shorthand), "ignored" (not a pod CREATE), "bad_request".
  std::string outcome;
  std::string uid;
  std::string pod;     // namespace/name as the request names it, for the log
  std::string skipped; // the mutator's reason, for the log
  std::set<std::string> applied;
  std::vector<std::string> warnings;
};

// `read_claim` reads the claims of pods that use DRA; without it such claims are not checked (the
// pod gets a warning).
ReviewOutcome reviewAdmission(std::string_view body, const WebhookPolicy& policy,
                              const ClaimSpecLookup& read_claim = nullptr);

} // namespace kube_rdma
