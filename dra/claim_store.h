#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/util/result.h"
#include "dra/claim_rendering.h"

namespace kube_rdma {

// The prepared claims and the files written for each, checkpointed in
// "<state_dir>/dra-checkpoint.json" so that a restarted driver still unprepares what an earlier
// run prepared. Every write is atomic (temporary file and rename). Thread-safe.
class ClaimStore {
public:
  // Reads the checkpoint; none yet is an empty store, a damaged one an error naming the file.
  static Result<std::unique_ptr<ClaimStore>> open(const std::string& state_dir);

  // Records the claim in the checkpoint, then writes its files. Preparing a claim again rewrites
  // them (the same claim gives the same content). When a write fails, what was written for the
  // claim is removed and it is not recorded.
  Status prepare(const std::string& uid, const PreparedClaim& claim);

  // Removes the claim's files and its record. A claim never prepared (or already unprepared) is
  // not an error.
  Status unprepare(const std::string& uid);

  std::vector<std::string> preparedClaims() const;
  std::string checkpointPath() const { return state_dir_ + "/dra-checkpoint.json"; }

private:
  explicit ClaimStore(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  Status saveLocked() const;

  const std::string state_dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<std::string>> files_; // claim UID -> paths written
};
using ClaimStorePtr = std::unique_ptr<ClaimStore>;

} // namespace kube_rdma
