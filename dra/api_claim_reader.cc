#include "dra/api_claim_reader.h"

#include "kubeclient/api_paths.h"

namespace kube_rdma {

Result<nlohmann::json> ApiClaimReader::getResourceClaim(const std::string& namespace_name,
                                                        const std::string& name) {
  Result<std::string> path = objectPath(kResourceClaims, namespace_name, name);
  if (!path.ok()) {
    return path.error();
  }
  ApiResult<nlohmann::json> claim = api_.get(*path);
  if (!claim.ok()) {
    return toError(claim.error());
  }
  return std::move(*claim);
}

} // namespace kube_rdma
