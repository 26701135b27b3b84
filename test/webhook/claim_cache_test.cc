// The webhook's reads of resource claims from the API-server simulator over real TLS: claim and
// template specs, the API's error passed on, the cache and its expiry, and a whole review.
#include "webhook/claim_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "test/apiserver/simulated_api.h"
#include "test/fakes/fake_clock.h"
#include "test/webhook/admission_test_support.h"
#include "webhook/review.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

json readDra(const std::string& file) {
  std::ifstream in(std::filesystem::path(KUBE_RDMA_WEBHOOK_TESTDATA) / "dra" / file);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

class ClaimCacheTest : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(api_.start("system:serviceaccount:kube-rdma:rdma-webhook", {}, clock_), "");
    api_.simulator().put("resourceclaimtemplates", readDra("gpu-and-nic.template.json"));
    api_.simulator().put("resourceclaims", readDra("shared-nics.claim.json"));
    cache_ = std::make_unique<ClaimCache>(api_.api(), clock_, std::chrono::seconds(30), registry_);
  }

  // rdma_webhook_claim_reads_total{source=...}
  double reads(const char* source) {
    return registry_.counter({"rdma_webhook_claim_reads_total", ""}, {{"source", source}}).value();
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  SimulatedApi api_;
  MetricsRegistry registry_;
  std::unique_ptr<ClaimCache> cache_;
};

// Reviews that need one template at once: one GET, the others wait for its answer (a Job's 32
// pods created together used to send 32).
TEST_F(ClaimCacheTest, ReviewsArrivingTogetherShareOneGet) {
  constexpr int kReaders = 8;
  const PodClaimSource source{"gpu-nic", "", "gpu-and-nic"};
  const size_t before = api_.simulator().requestCount();
  api_.simulator().holdRequests();
  std::atomic<int> answered{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&] {
      auto requests = cache_->read("training", source);
      answered += requests.ok() && requests->size() == 2u ? 1 : 0;
    });
  }
  // Every other reader has joined the GET in flight (a broken single flight never gets here).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reads("in-flight") < kReaders - 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(reads("in-flight"), kReaders - 1);
  api_.simulator().resumeRequests();
  for (auto& reader : readers) {
    reader.join();
  }
  EXPECT_EQ(answered, kReaders);
  EXPECT_EQ(api_.simulator().requestCount(), before + 1);
  EXPECT_EQ(reads("api"), 1.0);
  EXPECT_EQ(reads("cache"), 0.0);
  // The next one comes from the cache.
  ASSERT_TRUE(cache_->read("training", source).ok());
  EXPECT_EQ(reads("cache"), 1.0);
}

// A GET that fails fails every review that waited for it, and is not kept.
TEST_F(ClaimCacheTest, AFailedGetInFlightFailsItsWaitersAndIsNotKept) {
  const PodClaimSource missing{"x", "no-such-claim", ""};
  api_.simulator().holdRequests();
  std::vector<std::string> errors(2);
  std::vector<std::thread> readers;
  for (auto& error : errors) {
    readers.emplace_back([&] {
      auto requests = cache_->read("training", missing);
      error = requests.ok() ? "" : requests.error().message;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reads("in-flight") < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  api_.simulator().resumeRequests();
  for (auto& reader : readers) {
    reader.join();
  }
  for (const auto& error : errors) {
    EXPECT_NE(error.find("\"no-such-claim\" not found"), std::string::npos) << error;
  }
  const size_t after = api_.simulator().requestCount();
  EXPECT_FALSE(cache_->read("training", missing).ok());
  EXPECT_EQ(api_.simulator().requestCount(), after + 1) << "an error is read again";
}

TEST_F(ClaimCacheTest, ReadsTheSpecOfAClaimAndOfATemplate) {
  Result<std::vector<ClaimRequest>> from_template =
      cache_->read("training", {"gpu-nic", "", "gpu-and-nic"});
  ASSERT_TRUE(from_template.ok()) << from_template.error().message;
  ASSERT_EQ(from_template->size(), 2u);
  EXPECT_EQ((*from_template)[1].name, "nic");
  EXPECT_EQ((*from_template)[1].device_classes,
            (std::vector<std::string>{"roce.rdma.kube-rdma.io"}));
  Result<std::vector<ClaimRequest>> claim = cache_->read("training", {"nics", "shared-nics", ""});
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  ASSERT_EQ(claim->size(), 2u);
  EXPECT_EQ((*claim)[0].name, "nics");
}

TEST_F(ClaimCacheTest, TheApiServersMessageIsPassedOn) {
  Result<std::vector<ClaimRequest>> missing = cache_->read("training", {"x", "no-such-claim", ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(
      missing.error().message.find("resourceclaims.resource.k8s.io \"no-such-claim\" not found"),
      std::string::npos)
      << missing.error().message;
  api_.simulator().removeToken(kSimulatedApiToken);
  Result<std::vector<ClaimRequest>> refused =
      cache_->read("training", {"gpu-nic", "", "gpu-and-nic"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("401"), std::string::npos) << refused.error().message;
}

TEST_F(ClaimCacheTest, AnAnswerIsKeptForItsTtlAndAnErrorIsNot) {
  const PodClaimSource source{"gpu-nic", "", "gpu-and-nic"};
  ASSERT_TRUE(cache_->read("training", source).ok());
  const size_t after_first = api_.simulator().requestCount();
  ASSERT_TRUE(cache_->read("training", source).ok());
  EXPECT_EQ(api_.simulator().requestCount(), after_first) << "read again within the TTL";
  clock_->advance(std::chrono::seconds(31));
  ASSERT_TRUE(cache_->read("training", source).ok());
  EXPECT_EQ(api_.simulator().requestCount(), after_first + 1);

  const PodClaimSource late{"late", "late-claim", ""};
  EXPECT_FALSE(cache_->read("training", late).ok());
  json claim = readDra("shared-nics.claim.json");
  claim["metadata"]["name"] = "late-claim";
  api_.simulator().put("resourceclaims", claim);
  EXPECT_TRUE(cache_->read("training", late).ok()) << "a claim made after a miss is found";
}

TEST_F(ClaimCacheTest, AReviewReadsThePodsClaimsFromTheApiServer) {
  const json pod = readDra("trainer.pod.json");
  const ReviewOutcome outcome = reviewAdmission(
      test_support::podCreateReview(pod, "c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8").dump(),
      defaultWebhookPolicy(), cache_->lookup());
  EXPECT_EQ(outcome.outcome, "mutated");
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  EXPECT_EQ(outcome.applied, (std::set<std::string>{"env", "ipc-lock", "shm"}));
}

} // namespace
} // namespace kube_rdma
