#include "kubeclient/pod_events.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test/apiserver/api_server_simulator.h"
#include "test/fakes/shared_log_sink.h"
#include "test/plugin/temp_dir.h"
#include "test/webhook/eventually.h"
#include "test/webhook/test_certificates.h"

namespace kube_rdma {
namespace {

using json = nlohmann::json;

PodWarning worker0(const std::string& reason, const std::string& message) {
  return {"training", "worker-0", "0f6c-uid", reason, message};
}

TEST(PodWarningEvent, IsTheCoreEventKubectlDescribeLists) {
  const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'796'000'000)) +
                  std::chrono::nanoseconds(42);
  const json event = podWarningEvent(worker0("RdmaGidPortsDisagree", "ports disagree"),
                                     "rdma-dra-driver", "gpu-node-1", at);
  EXPECT_EQ(event["metadata"],
            (json{{"name", "worker-0.18ecac7c009a002a"}, {"namespace", "training"}}));
  EXPECT_EQ(event["involvedObject"], (json{{"apiVersion", "v1"},
                                           {"kind", "Pod"},
                                           {"namespace", "training"},
                                           {"name", "worker-0"},
                                           {"uid", "0f6c-uid"}}));
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "RdmaGidPortsDisagree");
  EXPECT_EQ(event["source"], (json{{"component", "rdma-dra-driver"}, {"host", "gpu-node-1"}}));
  EXPECT_EQ(event["firstTimestamp"], "2026-11-30T00:53:20Z");
  EXPECT_EQ(event["lastTimestamp"], event["firstTimestamp"]);
  EXPECT_EQ(event["count"], 1);
}

class PodEventRecorderTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(makeTestCertificates(dir_.path(), {"apiserver"}), "");
    simulator_ = std::make_unique<ApiServerSimulator>(SimulatorTls{
        dir_.path() + "/apiserver.crt", dir_.path() + "/apiserver.key", dir_.path() + "/ca.crt"});
    ASSERT_TRUE(simulator_->start());
    simulator_->addToken("t", "system:serviceaccount:kube-rdma:rdma-dra-driver");
    ApiConfig config;
    config.server = simulator_->url();
    std::ifstream ca(dir_.path() + "/ca.crt");
    config.ca_pem.assign(std::istreambuf_iterator<char>(ca), {});
    config.token = "t";
    auto made = ApiClient::fromConfig(config, {}, std::make_shared<RealClock>());
    ASSERT_TRUE(made) << made.error().message;
    api_ = std::move(*made);
  }

  std::vector<json> events() const { return simulator_->objects("events"); }

  TempDir dir_;
  std::unique_ptr<ApiServerSimulator> simulator_;
  ApiClientPtr api_;
  SharedLogSink log_sink_;
  Logger log_{log_sink_};
};

TEST_F(PodEventRecorderTest, OneEventPerPodAndReason) {
  PodEventRecorder recorder(*api_, "rdma-dra-driver", "gpu-node-1", std::make_shared<RealClock>(),
                            log_);
  recorder.warn(worker0("RdmaGidPortsDisagree", "first"));
  recorder.warn(worker0("RdmaGidPortsDisagree", "the container again")); // not repeated
  recorder.warn(worker0("RdmaGidIndexUnresolved", "another reason"));
  recorder.warn({"training", "worker-1", "1a2b-uid", "RdmaGidPortsDisagree", "another pod"});
  // Posted in order: once the last is there, the repeat would have been too.
  ASSERT_TRUE(eventually([&] { return events().size() >= 3; }));
  std::multiset<std::string> posted;
  for (const json& event : events()) {
    posted.insert(event["involvedObject"]["name"].get<std::string>() + " " +
                  event["reason"].get<std::string>() + " " + event["message"].get<std::string>());
  }
  EXPECT_EQ(posted, (std::multiset<std::string>{"worker-0 RdmaGidPortsDisagree first",
                                                "worker-0 RdmaGidIndexUnresolved another reason",
                                                "worker-1 RdmaGidPortsDisagree another pod"}));
}

TEST_F(PodEventRecorderTest, AnEventTheServerRefusesIsLogged) {
  simulator_->allow("system:serviceaccount:kube-rdma:rdma-dra-driver", "get", "nodes");
  PodEventRecorder recorder(*api_, "rdma-dra-driver", "gpu-node-1", std::make_shared<RealClock>(),
                            log_);
  recorder.warn(worker0("RdmaGidPortsDisagree", "refused"));
  ASSERT_TRUE(eventually([&] {
    return log_sink_.text().find("cannot post an event on the pod") != std::string::npos;
  }));
  EXPECT_NE(log_sink_.text().find("pod=training/worker-0"), std::string::npos) << log_sink_.text();
  EXPECT_TRUE(events().empty());
}

} // namespace
} // namespace kube_rdma
