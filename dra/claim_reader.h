#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/util/result.h"

namespace kube_rdma {

// Reads a ResourceClaim from the API server (GET
// /apis/resource.k8s.io/v1/namespaces/<namespace>/resourceclaims/<name>).
class ClaimReader {
public:
  virtual ~ClaimReader() = default;
  /**
   * @return the ResourceClaim as the API server sent it, or an error saying why not (the API's
   * Status message when it gave one).
   */
  virtual Result<nlohmann::json> getResourceClaim(const std::string& namespace_name,
                                                  const std::string& name) = 0;
};

} // namespace kube_rdma
