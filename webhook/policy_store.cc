#include "webhook/policy_store.h"

#include "kubeclient/kubeconfig.h"

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
  Result<std::string> text = readWholeFile(path_);
  if (!text.ok()) {
    return makeError("cannot read policy " + path_);
  }
  if (current_.load() != nullptr && *text == text_) {
    return Ok{};
  }
  Result<WebhookPolicy> policy = parseWebhookPolicy(*text);
  if (!policy.ok()) {
    return makeError("policy " + path_ + ": " + policy.error().message);
  }
  current_.store(std::make_shared<const WebhookPolicy>(std::move(policy).value()));
  text_ = std::move(*text);
  ++generation_;
  return Ok{};
}

} // namespace kube_rdma
