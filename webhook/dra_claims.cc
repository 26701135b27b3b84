#include "webhook/dra_claims.h"

#include <algorithm>

#include "common/util/json_members.h"
#include "common/util/strings.h"

namespace kube_rdma {

using nlohmann::json;

std::vector<PodClaimSource> podClaimSources(JsonElement pod) {
  std::vector<PodClaimSource> sources;
  JsonElement spec;
  if (!member(pod, "spec", spec)) {
    return sources;
  }
  for (JsonElement entry : arrayMember(spec, "resourceClaims")) {
    PodClaimSource source{std::string(stringMember(entry, "name")),
                          std::string(stringMember(entry, "resourceClaimName")),
                          std::string(stringMember(entry, "resourceClaimTemplateName"))};
    if (!source.name.empty() && (!source.claim_name.empty() || !source.template_name.empty())) {
      sources.push_back(std::move(source));
    }
  }
  return sources;
}

std::vector<ClaimRequest> claimRequests(const json& claim_spec) {
  std::vector<ClaimRequest> out;
  const json* devices = jsonMember(claim_spec, "devices");
  const json* requests = devices != nullptr ? jsonMember(*devices, "requests") : nullptr;
  if (requests == nullptr || !requests->is_array()) {
    return out;
  }
  for (const json& request : *requests) {
    ClaimRequest& read = out.emplace_back(ClaimRequest{jsonStringMember(request, "name"), {}});
    const json* first_available = jsonMember(request, "firstAvailable");
    if (const json* exactly = jsonMember(request, "exactly")) {
      read.device_classes.push_back(jsonStringMember(*exactly, "deviceClassName"));
    } else if (first_available != nullptr && first_available->is_array()) {
      for (const json& alternative : *first_available) {
        read.device_classes.push_back(jsonStringMember(alternative, "deviceClassName"));
      }
    }
  }
  return out;
}

std::set<std::string> rdmaRequestNames(const std::vector<ClaimRequest>& requests,
                                       const std::vector<std::string>& classes) {
  std::set<std::string> names;
  for (const ClaimRequest& request : requests) {
    // Any alternative may be the one allocated: only when all of them are RDMA is the container
    // sure to get an RDMA device.
    if (!request.name.empty() && !request.device_classes.empty() &&
        std::all_of(request.device_classes.begin(), request.device_classes.end(),
                    [&](const std::string& name) { return listContains(classes, name); })) {
      names.insert(request.name);
    }
  }
  return names;
}

bool usesRdmaClaim(JsonElement container, const PodRdmaClaims& claims) {
  JsonElement resources;
  if (!member(container, "resources", resources)) {
    return false;
  }
  for (JsonElement entry : arrayMember(resources, "claims")) {
    auto claim = claims.find(std::string(stringMember(entry, "name")));
    if (claim == claims.end() || claim->second.empty()) {
      continue;
    }
    const std::string_view request = stringMember(entry, "request");
    if (request.empty() ||
        claim->second.contains(std::string(request.substr(0, request.find('/'))))) {
      return true;
    }
  }
  return false;
}

} // namespace kube_rdma
