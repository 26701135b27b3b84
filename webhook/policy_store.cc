#include "webhook/policy_store.h"

#include <fstream>
#include <sstream>

namespace kube_rdma {

PolicyStore::PolicyStore(std::string path) : path_(std::move(path)) {
  if (path_.empty()) {
    current_.store(std::make_shared<const WebhookPolicy>(defaultWebhookPolicy()));
    generation_ = 1;
  }
}

Status PolicyStore::reload() {
  if (path_.empty()) {
    return Ok{};
  }
  std::lock_guard<std::mutex> lock(reload_mutex_);
  std::ifstream in(path_);
  if (!in) {
    return makeError("cannot read policy " + path_);
  }
  std::stringstream text;
  text << in.rdbuf();
  if (current_.load() != nullptr && text.str() == text_) {
    return Ok{};
  }
  Result<WebhookPolicy> policy = parseWebhookPolicy(text.str());
  if (!policy.ok()) {
    return makeError("policy " + path_ + ": " + policy.error().message);
  }
  current_.store(std::make_shared<const WebhookPolicy>(std::move(policy).value()));
  text_ = text.str();
  ++generation_;
  return Ok{};
}

} // namespace kube_rdma
