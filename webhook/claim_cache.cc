#include "webhook/claim_cache.h"

#include "kubeclient/api_paths.h"

namespace kube_rdma {

Result<std::vector<ClaimRequest>> ClaimCache::read(const std::string& ns,
                                                   const PodClaimSource& source) {
  const bool from_template = source.claim_name.empty();
  Result<std::string> path = from_template
                                 ? objectPath(kResourceClaimTemplates, ns, source.template_name)
                                 : objectPath(kResourceClaims, ns, source.claim_name);
  if (!path.ok()) {
    return path.error();
  }
  const auto now = clock_->now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(*path);
    if (it != entries_.end() && now < it->second.expires) {
      return it->second.requests;
    }
  }
  ApiResult<nlohmann::json> object = api_.get(*path);
  if (!object.ok()) {
    return toError(object.error());
  }
  const nlohmann::json::json_pointer where(from_template ? "/spec/spec" : "/spec");
  if (!object->contains(where) || !object->at(where).is_object()) {
    return makeError(*path + " has no " + (from_template ? "spec.spec" : "spec"));
  }
  std::vector<ClaimRequest> requests = claimRequests(object->at(where));
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() >= kMaxEntries) {
    entries_.clear();
  }
  entries_[*path] = Entry{requests, now + ttl_};
  return requests;
}

} // namespace kube_rdma
