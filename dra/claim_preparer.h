#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "common/util/clock.h"
#include "common/node/device_model.h"
#include "common/util/log.h"
#include "common/util/result.h"
#include "dra/claim_rendering.h"
#include "dra/claim_reader.h"
#include "dra/claim_store.h"
#include "dra/dra_metrics.h"

namespace kube_rdma {

// NodePrepareResources and NodeUnprepareResources for one claim, whatever the gRPC version:
// reads the claim, prepares it (renderClaim) and writes its files (ClaimStore). Thread-safe;
// the node's topology can be replaced while calls run. Each call's outcome and duration go to
// the metrics.
class ClaimPreparer {
public:
  /** @param reader, store, logger, metrics, clock not owned; must outlive the preparer. */
  ClaimPreparer(ClaimReader& reader, ClaimStore& store, PrepareContext context,
                NodeTopology topology, Logger& logger, DraMetrics& metrics, const Clock& clock)
      : reader_(reader), store_(store), context_(std::move(context)),
        topology_(std::move(topology)), logger_(logger), metrics_(metrics), clock_(clock) {}

  Result<std::vector<PreparedDevice>> prepare(const ClaimRef& claim);
  // A claim this driver never prepared is not an error (the kubelet repeats calls).
  Status unprepare(const ClaimRef& claim);

  void setTopology(NodeTopology topology);

private:
  // prepare() without the metrics.
  Result<std::vector<PreparedDevice>> readAndPrepare(const ClaimRef& claim);

  ClaimReader& reader_;
  ClaimStore& store_;
  const PrepareContext context_;
  std::mutex topology_mutex_;
  NodeTopology topology_;
  Logger& logger_;
  DraMetrics& metrics_;
  const Clock& clock_;
};

} // namespace kube_rdma
