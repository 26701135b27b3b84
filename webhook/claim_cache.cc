#include "webhook/claim_cache.h"

#include "kubeclient/api_paths.h"

namespace kube_rdma {
namespace {

constexpr MetricFamily kClaimReads{
    "rdma_webhook_claim_reads_total",
    "Reads of pods' ResourceClaims and templates, by where the answer came from: a GET to the API "
    "server, the cache, or another review's GET in flight."};

} // namespace

ClaimCache::ClaimCache(ApiClient& api, ClockPtr clock, std::chrono::milliseconds ttl,
                       MetricsRegistry& metrics)
    : api_(api), clock_(std::move(clock)), ttl_(ttl),
      from_api_(metrics.counter(kClaimReads, {{"source", "api"}})),
      from_cache_(metrics.counter(kClaimReads, {{"source", "cache"}})),
      joined_(metrics.counter(kClaimReads, {{"source", "in-flight"}})) {}

Result<std::vector<ClaimRequest>> ClaimCache::read(const std::string& ns,
                                                   const PodClaimSource& source) {
  const bool from_template = source.claim_name.empty();
  Result<std::string> path = from_template
                                 ? objectPath(kResourceClaimTemplates, ns, source.template_name)
                                 : objectPath(kResourceClaims, ns, source.claim_name);
  if (!path.ok()) {
    return path.error();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (auto it = entries_.find(*path); it != entries_.end() && clock_->now() < it->second.expires) {
    from_cache_.inc();
    return it->second.requests;
  }
  if (auto flight = in_flight_.find(*path); flight != in_flight_.end()) {
    joined_.inc();
    const std::shared_future<Answer> answer = flight->second;
    lock.unlock();
    return answer.get();
  }
  std::promise<Answer> promise;
  in_flight_.emplace(*path, promise.get_future().share());
  from_api_.inc();
  lock.unlock();
  // Whatever happens, the reviews waiting for this GET get an answer.
  Answer answer = makeError("cannot read " + *path);
  try {
    answer = get(*path, from_template);
  } catch (const std::exception& e) {
    answer = makeError("cannot read " + *path + ": " + e.what());
  }
  lock.lock();
  if (answer.ok()) {
    if (entries_.size() >= kMaxEntries) {
      entries_.clear();
    }
    entries_[*path] = Entry{*answer, clock_->now() + ttl_};
  }
  in_flight_.erase(*path);
  lock.unlock();
  promise.set_value(answer);
  return answer;
}

ClaimCache::Answer ClaimCache::get(const std::string& path, bool from_template) {
  ApiResult<nlohmann::json> object = api_.get(path);
  if (!object.ok()) {
    return toError(object.error());
  }
  const nlohmann::json::json_pointer where(from_template ? "/spec/spec" : "/spec");
  if (!object->contains(where) || !object->at(where).is_object()) {
    return makeError(path + " has no " + (from_template ? "spec.spec" : "spec"));
  }
  return claimRequests(object->at(where));
}

} // namespace kube_rdma
