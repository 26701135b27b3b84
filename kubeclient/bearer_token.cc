#include "kubeclient/bearer_token.h"

#include <utility>

namespace kube_rdma {

constexpr std::chrono::seconds kMaxAge{60};

BearerToken::BearerToken(std::string fixed_token, std::string token_file, ReadFile read_file,
                         ClockPtr clock)
    : fixed_token_(std::move(fixed_token)), token_file_(std::move(token_file)),
      read_file_(std::move(read_file)), clock_(std::move(clock)) {}

Result<std::string> BearerToken::current() {
  if (token_file_.empty()) {
    return fixed_token_;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock_->now();
  if (have_cached_ && now - read_at_ < kMaxAge) {
    return cached_;
  }
  Result<std::string> content = read_file_(token_file_);
  // Token files end with a newline when written by hand (`echo`); the header must not carry it.
  std::string token = content ? content->substr(0, content->find_last_not_of("\r\n ") + 1) : "";
  if (token.empty()) {
    if (have_cached_) {
      return cached_;
    }
    return makeError("token file: " +
                     (content ? token_file_ + " is empty" : content.error().message));
  }
  cached_ = std::move(token);
  have_cached_ = true;
  read_at_ = now;
  return cached_;
}

void BearerToken::expire() {
  std::lock_guard<std::mutex> lock(mutex_);
  read_at_ = clock_->now() - kMaxAge;
}

} // namespace kube_rdma
