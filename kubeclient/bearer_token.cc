#include "kubeclient/bearer_token.h"

#include <utility>

namespace kube_rdma {
namespace {

// Token files end with a newline when written by hand (`echo`); the header must not carry it.
std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

} // namespace

BearerToken::BearerToken(std::string fixed_token, std::string token_file, ReadFile read_file,
                         ClockPtr clock, std::chrono::seconds max_age)
    : fixed_token_(std::move(fixed_token)), token_file_(std::move(token_file)),
      read_file_(std::move(read_file)), clock_(std::move(clock)), max_age_(max_age) {}

Result<std::string> BearerToken::current() {
  if (token_file_.empty()) {
    return fixed_token_;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock_->now();
  if (have_cached_ && now - read_at_ < max_age_) {
    return cached_;
  }
  Result<std::string> content = read_file_(token_file_);
  if (!content || trimmed(*content).empty()) {
    if (have_cached_) {
      return cached_;
    }
    return makeError("token file: " +
                     (content ? token_file_ + " is empty" : content.error().message));
  }
  cached_ = trimmed(std::move(*content));
  have_cached_ = true;
  read_at_ = now;
  return cached_;
}

void BearerToken::expire() {
  std::lock_guard<std::mutex> lock(mutex_);
  read_at_ = clock_->now() - max_age_;
}

} // namespace kube_rdma
