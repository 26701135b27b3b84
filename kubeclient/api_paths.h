#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/util/result.h"

// REST paths and query strings of the Kubernetes API, built without I/O.
namespace kube_rdma {

// A resource type as the API serves it: /api/v1/nodes (the core group has no name) or
// /apis/<group>/<version>/[namespaces/<ns>/]<plural>.
struct ApiResource {
  std::string_view group;
  std::string_view version;
  std::string_view plural;
  bool namespaced;
};

inline constexpr ApiResource kNodes{"", "v1", "nodes", false};
inline constexpr ApiResource kResourceSlices{"resource.k8s.io", "v1", "resourceslices", false};
inline constexpr ApiResource kResourceClaims{"resource.k8s.io", "v1", "resourceclaims", true};
inline constexpr ApiResource kResourceClaimTemplates{"resource.k8s.io", "v1",
                                                     "resourceclaimtemplates", true};

// The collection's path. A namespaced resource needs a namespace (an empty one means every
// namespace, which only LIST and WATCH accept); a cluster-scoped one must have none.
Result<std::string> collectionPath(const ApiResource& resource, std::string_view ns);
// The object's path: the collection's, then the name. Names and namespaces are percent-encoded.
Result<std::string> objectPath(const ApiResource& resource, std::string_view ns,
                               std::string_view name);

// Percent-encoding of everything but RFC 3986's unreserved characters, so selectors such as
// `spec.nodeName=node-1,spec.driver=x` keep their meaning inside a query value.
std::string percentEncode(std::string_view text);

// `path?k1=v1&k2=v2` with the values percent-encoded; parameters with empty values are left out.
std::string withQuery(std::string path,
                      const std::vector<std::pair<std::string, std::string>>& parameters);

// Where an API server listens, from a kubeconfig's `server`: https only (TLS is always on).
struct ServerAddress {
  std::string host; // without brackets for IPv6
  int port = 443;
  std::string path_prefix; // a server behind a path ("https://proxy/k8s"); usually empty
};
Result<ServerAddress> parseServerUrl(std::string_view url);

} // namespace kube_rdma
