#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/util/result.h"
#include "webhook/policy.h"

// The policy in force. Requests take a snapshot (a shared_ptr) and keep it for the whole review,
// so a reload never changes a policy under a request. A bad file never replaces a good policy.
namespace kube_rdma {

class PolicyStore {
public:
  // An empty path means no policy file: the defaults, loaded at once.
  explicit PolicyStore(std::string path);

  // Reads and validates the file again; on error the policy in use stays. A file whose text has
  // not changed (the watcher reports one change more than once) is not counted again.
  Status reload();
  // nullptr until a valid policy was loaded.
  std::shared_ptr<const WebhookPolicy> current() const { return current_.load(); }
  // How many policies have been put in force (1 after the first load).
  uint64_t generation() const { return generation_.load(); }

private:
  std::string path_;
  std::mutex reload_mutex_;
  std::string text_; // of the policy in force
  std::atomic<std::shared_ptr<const WebhookPolicy>> current_;
  std::atomic<uint64_t> generation_{0};
};

} // namespace kube_rdma
