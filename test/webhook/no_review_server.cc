// rdma-webhook without its review: the same process (flags, TLS, thread pool, held writes, log
// line, metrics) whose POST /mutate answers a body it has reviewed once with that review's
// outcome, copied. bench_https.sh's "no-review" row: what the server costs around a review, so
// that the review's share of a request can be read off beside the real binary. Not a product.
#include <memory>
#include <mutex>
#include <string>

#include "webhook/run_webhook.h"

namespace kube_rdma {
namespace {

class RememberedReview {
public:
  ReviewOutcome operator()(std::string_view body, const WebhookPolicy& policy) {
    std::call_once(first_, [&] {
      body_ = body;
      outcome_ = reviewAdmission(body, policy);
    });
    return body == body_ ? outcome_ : reviewAdmission(body, policy);
  }

private:
  std::once_flag first_;
  std::string body_;
  ReviewOutcome outcome_;
};

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  auto remembered = std::make_shared<kube_rdma::RememberedReview>();
  return kube_rdma::runWebhook(
      "webhook_no_review", {argv + 1, argv + argc},
      [remembered](std::string_view body, const kube_rdma::WebhookPolicy& policy) {
        return (*remembered)(body, policy);
      });
}
