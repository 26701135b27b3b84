#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/util/result.h"
#include "webhook/pod_fields.h"

// A pod's Dynamic Resource Allocation claims as the webhook sees them at admission: which of the
// pod's claims ask for devices of the policy's RDMA DeviceClasses, by request name. The claims
// themselves live in the API server; reading them is the caller's job (ClaimSpecLookup).
namespace kube_rdma {

// One entry of the pod's spec.resourceClaims: its name in the pod and where its claim comes from.
struct PodClaimSource {
  std::string name;
  std::string claim_name;    // resourceClaimName: an existing ResourceClaim
  std::string template_name; // resourceClaimTemplateName: a claim made from it after admission
};

// The pod's spec.resourceClaims entries that name a claim or a template.
std::vector<PodClaimSource> podClaimSources(JsonElement pod);

// A device request of a ResourceClaimSpec as far as the webhook looks at it.
struct ClaimRequest {
  std::string name;
  // The DeviceClasses that may serve it: `exactly`'s, or each `firstAvailable` alternative's.
  std::vector<std::string> device_classes;
};

// The requests of a ResourceClaimSpec (a claim's spec, a template's spec.spec) as the API server
// returns it; members of another shape are read as absent.
std::vector<ClaimRequest> claimRequests(const nlohmann::json& claim_spec);

// The names of `requests` that can only be met with devices of `classes`: every class that may
// serve the request is in `classes`.
std::set<std::string> rdmaRequestNames(const std::vector<ClaimRequest>& requests,
                                       const std::vector<std::string>& classes);

// Pod claim name -> the RDMA request names of its claim (empty: none).
using PodRdmaClaims = std::map<std::string, std::set<std::string>>;

// Whether `container` uses an RDMA request of `claims` through resources.claims[]: {name} alone
// uses every request of that claim, {name, request} one request ("req" or "req/subrequest").
bool usesRdmaClaim(JsonElement container, const PodRdmaClaims& claims);

// Reads the requests of the ResourceClaimSpec behind `source` in `ns` (the claim's spec or the
// template's spec.spec); the error says why it could not.
using ClaimSpecLookup = std::function<Result<std::vector<ClaimRequest>>(
    const std::string& ns, const PodClaimSource& source)>;

} // namespace kube_rdma
