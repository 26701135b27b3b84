#pragma once

#include <string>

#include "dra/claim_reader.h"
#include "kubeclient/api_client.h"

namespace kube_rdma {

// ClaimReader over the Kubernetes API: GET of the claim, the API's Status message passed on
// when it refuses (not found, forbidden).
class ApiClaimReader final : public ClaimReader {
public:
  /** @param api not owned; must outlive the reader. */
  explicit ApiClaimReader(ApiClient& api) : api_(api) {}

  // ClaimReader
  Result<nlohmann::json> getResourceClaim(const std::string& namespace_name,
                                          const std::string& name) override;

private:
  ApiClient& api_;
};

} // namespace kube_rdma
