#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "webhook/admission_codec.h"
#include "webhook/mutator.h"

// For the mutator's golden and property tests.
namespace kube_rdma::test_support {

// A review parses only podMembersRead() of the pod: what mutatePod gives for the pod parsed that
// way must be `whole_pod_result`. Returns what differs, "" when nothing does.
inline std::string differenceWhenFiltered(const nlohmann::json& pod, const std::string& ns,
                                          const WebhookPolicy& policy,
                                          const MutationResult& whole_pod_result) {
  Result<nlohmann::json> filtered = parseFiltered(pod.dump(), podMembersRead(), kMaxJsonDepth);
  if (!filtered.ok()) {
    return "the filtered parse failed: " + filtered.error().message;
  }
  const MutationResult got = mutatePod(*filtered, ns, policy);
  std::string out;
  if (got.patch != whole_pod_result.patch) {
    out += "patch " + got.patch.dump() + " instead of " + whole_pod_result.patch.dump() + "; ";
  }
  if (got.warnings != whole_pod_result.warnings) {
    out += "other warnings; ";
  }
  if (got.applied != whole_pod_result.applied) {
    out += "other applied kinds; ";
  }
  if (got.skipped != whole_pod_result.skipped) {
    out += "skipped \"" + got.skipped + "\" instead of \"" + whole_pod_result.skipped + "\"";
  }
  return out;
}

} // namespace kube_rdma::test_support
