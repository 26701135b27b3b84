#include "dra/claim_preparer.h"

namespace kube_rdma {

Result<std::vector<PreparedDevice>> ClaimPreparer::prepare(const ClaimRef& claim) {
  const auto started = clock_.now();
  Result<std::vector<PreparedDevice>> devices = readAndPrepare(claim);
  metrics_.recordPrepare(devices.ok(), clock_.now() - started);
  return devices;
}

Result<std::vector<PreparedDevice>> ClaimPreparer::readAndPrepare(const ClaimRef& claim) {
  Result<nlohmann::json> object = reader_.getResourceClaim(claim.namespace_name, claim.name);
  if (!object.ok()) {
    return makeError("cannot read ResourceClaim " + claim.namespace_name + "/" + claim.name + ": " +
                     object.error().message);
  }
  Result<PreparedClaim> prepared = [&] {
    std::lock_guard lock(topology_mutex_);
    return renderClaim(*object, claim, topology_, context_);
  }();
  if (!prepared.ok()) {
    logger_.error("cannot prepare claim", {{"claim", claim.namespace_name + "/" + claim.name},
                                           {"uid", claim.uid},
                                           {"error", prepared.error().message}});
    return prepared.error();
  }
  if (auto status = store_.prepare(claim.uid, *prepared); !status.ok()) {
    return status.error();
  }
  logger_.info("prepared claim", {{"claim", claim.namespace_name + "/" + claim.name},
                                  {"uid", claim.uid},
                                  {"devices", std::to_string(prepared->devices.size())}});
  return std::move(prepared->devices);
}

Status ClaimPreparer::unprepare(const ClaimRef& claim) {
  const auto started = clock_.now();
  Status status = store_.unprepare(claim.uid);
  metrics_.recordUnprepare(status.ok(), clock_.now() - started);
  return status;
}

void ClaimPreparer::setTopology(NodeTopology topology) {
  std::lock_guard lock(topology_mutex_);
  topology_ = std::move(topology);
}

} // namespace kube_rdma
