// AdmissionServer in process with the review passed in: the HTTP side only hands the body and
// the policy in force to the Reviewer and sends back what it returns, counted by outcome.
#include "webhook/admission_server.h"

#include <gtest/gtest.h>

#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "test/webhook/test_certificates.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

class AdmissionServerTest : public testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("rdma-webhook-server-" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    ASSERT_EQ(makeTestCertificates(*dir_, {"serving"}), "");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  // Serves with `review` on a free port until the test ends.
  void start(Reviewer review) {
    ASSERT_TRUE(certificates_.reload().ok());
    ASSERT_TRUE(policies_.reload().ok());
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.max_connections = 4;
    server_ = std::make_unique<AdmissionServer>(options, certificates_, policies_, registry_,
                                                metrics_, std::make_shared<RealClock>(), logger_,
                                                std::move(review));
    ASSERT_TRUE(server_->bind().ok());
    serving_ = std::thread([this] { server_->serve(); });
  }

  void TearDown() override {
    if (server_ != nullptr) {
      server_->stop();
      serving_.join();
    }
  }

  httplib::Result post(const std::string& body) const {
    httplib::SSLClient client("127.0.0.1", server_->port());
    client.set_ca_cert_path((*dir_ / "ca.crt").c_str());
    client.enable_server_certificate_verification(true);
    return client.Post("/mutate?timeout=5s", body, "application/json");
  }

  static fs::path* dir_;
  CertificateStore certificates_{(*dir_ / "serving.crt").string(),
                                 (*dir_ / "serving.key").string()};
  PolicyStore policies_{""};
  MetricsRegistry registry_;
  WebhookMetrics metrics_{registry_};
  std::ostringstream log_;
  Logger logger_{log_};
  std::unique_ptr<AdmissionServer> server_;
  std::thread serving_;
};

fs::path* AdmissionServerTest::dir_ = nullptr;

TEST_F(AdmissionServerTest, TheReviewerGetsTheBodyAndThePolicyAndItsAnswerIsSent) {
  std::mutex mutex;
  std::string seen_body;
  std::vector<std::string> seen_resources;
  start([&](std::string_view body, const WebhookPolicy& policy) {
    const std::lock_guard<std::mutex> lock(mutex);
    seen_body = body;
    seen_resources = policy.resources;
    ReviewOutcome outcome;
    outcome.body = R"({"answer":"from the reviewer"})";
    outcome.outcome = "mutated";
    outcome.applied = {"ipc-lock", "shm"};
    return outcome;
  });

  const auto res = post(R"({"any":"body"})");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"answer":"from the reviewer"})");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  {
    const std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(seen_body, R"({"any":"body"})");
    // No policy file: the defaults are in force.
    EXPECT_EQ(seen_resources, (std::vector<std::string>{"rdma/hca", "rdma/shared"}));
  }
  const std::string metrics = server_->renderMetrics();
  EXPECT_NE(metrics.find(R"(rdma_webhook_requests_total{outcome="mutated"} 1)"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(rdma_webhook_mutations_total{kind="shm"} 1)"), std::string::npos)
      << metrics;
  EXPECT_NE(log_.str().find("pod reviewed"), std::string::npos) << log_.str();
}

TEST_F(AdmissionServerTest, AReviewersBadRequestGoesOutAsA400WithItsMessage) {
  start([](std::string_view, const WebhookPolicy&) {
    ReviewOutcome outcome;
    outcome.http_status = 400;
    outcome.body = "not an AdmissionReview: no request\n";
    outcome.outcome = "bad_request";
    return outcome;
  });

  const auto res = post("{}");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->body, "not an AdmissionReview: no request\n");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain");
  EXPECT_NE(
      server_->renderMetrics().find(R"(rdma_webhook_requests_total{outcome="bad_request"} 1)"),
      std::string::npos);
  EXPECT_NE(log_.str().find("bad admission request"), std::string::npos) << log_.str();
}

} // namespace
} // namespace kube_rdma
