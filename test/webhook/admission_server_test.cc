// AdmissionServer in process with the review passed in: the HTTP side only hands the body and
// the policy in force to the Reviewer and sends back what it returns, counted by outcome.
#include "webhook/admission_server.h"

#include <gtest/gtest.h>

#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "test/webhook/eventually.h"
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

  // Serves with `review` on a free port until the test ends; at most 4 connections, and an idle
  // one kept for a minute, so only stop() closes it within a test.
  void start(Reviewer review, std::function<bool(const HttpRequest&)> may_block = {}) {
    ASSERT_TRUE(certificates_.reload().ok());
    ASSERT_TRUE(policies_.reload().ok());
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.max_connections = 4;
    options.may_block = std::move(may_block);
    options.keep_alive_timeout = std::chrono::seconds(60);
    server_ = std::make_unique<AdmissionServer>(options, certificates_, policies_, registry_,
                                                metrics_, std::make_shared<RealClock>(), logger_,
                                                std::move(review));
    ASSERT_TRUE(server_->bind().ok());
    serving_ = std::thread([this] {
      server_->serve();
      served_ = true;
    });
  }

  void TearDown() override {
    if (server_ != nullptr) {
      server_->stop();
      serving_.join();
    }
  }

  std::unique_ptr<httplib::SSLClient> client() const {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    c->set_ca_cert_path((*dir_ / "ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    c->set_keep_alive(true);
    c->set_read_timeout(120, 0);
    return c;
  }

  httplib::Result post(const std::string& body) const {
    return client()->Post("/mutate?timeout=5s", body, "application/json");
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
  std::atomic<bool> served_{false};
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

// A review that waits on the API server (a claim template not cached) runs on the blocking pool:
// the connections of its event loop are answered meanwhile. Connections are dealt to the loops in
// turn, one loop per core: one more fast request than cores lands on the slow one's loop.
TEST_F(AdmissionServerTest, AReviewThatWaitsHoldsUpNoOtherConnection) {
  // Released however the test ends (destroyed before `slow`, which waits for the slow answer),
  // so that a failing test does not hang in stop().
  struct Releaser {
    std::promise<void> promise;
    ~Releaser() { promise.set_value(); }
  };
  std::future<httplib::Result> slow;
  auto releaser = std::make_unique<Releaser>();
  std::shared_future<void> released = releaser->promise.get_future().share();
  std::atomic<bool> waiting{false};
  start(
      [&](std::string_view body, const WebhookPolicy&) {
        ReviewOutcome outcome;
        outcome.outcome = "unchanged";
        outcome.body = std::string(body);
        if (body == "slow") {
          waiting = true;
          released.wait();
        }
        return outcome;
      },
      [](const HttpRequest& request) { return request.body() == "slow"; });
  slow = std::async(std::launch::async, [this] { return post("slow"); });
  ASSERT_TRUE(eventually([&] { return waiting.load(); }));
  for (unsigned i = 0; i <= std::max(2u, std::thread::hardware_concurrency()); ++i) {
    auto c = client();
    c->set_connection_timeout(30, 0); // the TLS handshake too waits for the loop
    c->set_read_timeout(30, 0);
    const auto fast = c->Post("/mutate", "fast", "application/json");
    ASSERT_TRUE(fast) << "request " << i << ": " << httplib::to_string(fast.error());
    EXPECT_EQ(fast->body, "fast");
  }
  releaser.reset();
  const auto res = slow.get();
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "slow");
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

ReviewOutcome fixedOutcome(std::string_view, const WebhookPolicy&) {
  ReviewOutcome outcome;
  outcome.body = "{}";
  outcome.outcome = "skipped";
  return outcome;
}

// The cap holds connections, not requests: a fifth client's handshake waits in the listen
// backlog until one of the four open connections closes.
TEST_F(AdmissionServerTest, AConnectionBeyondTheCapWaitsUntilOneCloses) {
  start(fixedOutcome);
  std::vector<std::unique_ptr<httplib::SSLClient>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(client());
    const auto res = open.back()->Get("/healthz");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
  }
  auto fifth = client();
  std::future<httplib::Result> waiting =
      std::async(std::launch::async, [&] { return fifth->Get("/healthz"); });
  // Not a timing bound: a server that ignored the cap answers at once.
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
  open.front()->stop();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const httplib::Result res = waiting.get();
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

// stop() closes a keep-alive connection waiting for its next request (kept for a minute
// otherwise) and serve() returns.
TEST_F(AdmissionServerTest, StopClosesIdleConnectionsAndServeReturns) {
  start(fixedOutcome);
  auto idle = client();
  ASSERT_TRUE(idle->Get("/healthz"));
  ASSERT_TRUE(eventually([&] {
    return server_->renderMetrics().find("rdma_webhook_open_connections 1\n") != std::string::npos;
  }));
  server_->stop();
  EXPECT_TRUE(eventually([&] { return served_.load(); }));
}

} // namespace
} // namespace kube_rdma
