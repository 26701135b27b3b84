#include "webhook/dra_claims.h"

#include <algorithm>

#include "common/strings.h"
#include "webhook/pod_fields.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

bool ofClass(const json& request, const std::vector<std::string>& classes) {
  return listContains(classes, stringMember(request, "deviceClassName"));
}

} // namespace

std::vector<PodClaimSource> podClaimSources(const json& pod) {
  std::vector<PodClaimSource> sources;
  const json* spec = member(pod, "spec");
  const json* claims = spec != nullptr ? member(*spec, "resourceClaims") : nullptr;
  if (claims == nullptr || !claims->is_array()) {
    return sources;
  }
  for (const json& entry : *claims) {
    PodClaimSource source{std::string(stringMember(entry, "name")),
                          std::string(stringMember(entry, "resourceClaimName")),
                          std::string(stringMember(entry, "resourceClaimTemplateName"))};
    if (!source.name.empty() && (!source.claim_name.empty() || !source.template_name.empty())) {
      sources.push_back(std::move(source));
    }
  }
  return sources;
}

std::set<std::string> rdmaRequestNames(const json& claim_spec,
                                       const std::vector<std::string>& classes) {
  std::set<std::string> names;
  const json* devices = member(claim_spec, "devices");
  const json* requests = devices != nullptr ? member(*devices, "requests") : nullptr;
  if (requests == nullptr || !requests->is_array()) {
    return names;
  }
  for (const json& request : *requests) {
    const std::string name(stringMember(request, "name"));
    const json* exactly = member(request, "exactly");
    const json* first_available = member(request, "firstAvailable");
    bool rdma = false;
    if (exactly != nullptr) {
      rdma = ofClass(*exactly, classes);
    } else if (first_available != nullptr && first_available->is_array() &&
               !first_available->empty()) {
      // Any alternative may be the one allocated: only when all of them are RDMA is the
      // container sure to get an RDMA device.
      rdma = std::all_of(first_available->begin(), first_available->end(),
                         [&](const json& sub) { return ofClass(sub, classes); });
    }
    if (rdma && !name.empty()) {
      names.insert(name);
    }
  }
  return names;
}

bool usesRdmaClaim(const json& container, const PodRdmaClaims& claims) {
  const json* resources = member(container, "resources");
  const json* used = resources != nullptr ? member(*resources, "claims") : nullptr;
  if (used == nullptr || !used->is_array()) {
    return false;
  }
  for (const json& entry : *used) {
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
