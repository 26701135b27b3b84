#include "kubeclient/api_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "test/apiserver/api_server_simulator.h"
#include "test/plugin/temp_dir.h"
#include "test/webhook/eventually.h"
#include "test/webhook/test_certificates.h"

// The client against the API-server simulator over real TLS: every verb, conflicts, watch,
// authentication and certificate verification.
namespace kube_rdma {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kToken = "driver-token";
constexpr const char* kUser = "system:serviceaccount:kube-rdma:rdma-dra-driver";

std::string slicesPath() {
  return *collectionPath(kResourceSlices, "");
}
std::string slicePath(const std::string& name) {
  return *objectPath(kResourceSlices, "", name);
}

json slice(const std::string& name, const std::string& node, const std::string& driver) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}, {"labels", {{"node", node}}}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
}

std::string readFile(const std::string& path) {
  return *readWholeFile(path);
}

class ApiClientTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(makeTestCertificates(dir_.path(), {"apiserver", "alice"}), "");
    ASSERT_EQ(makeTestCertificates(other_ca_.path(), {"impostor"}), "");
    simulator_ = std::make_unique<ApiServerSimulator>(SimulatorTls{
        dir_.path() + "/apiserver.crt", dir_.path() + "/apiserver.key", dir_.path() + "/ca.crt"});
    ASSERT_TRUE(simulator_->start());
    simulator_->addToken(kToken, kUser);
  }

  ApiConfig config() const {
    ApiConfig config;
    config.server = simulator_->url();
    config.ca_pem = readFile(dir_.path() + "/ca.crt");
    config.token = kToken;
    return config;
  }

  ApiClientPtr client(const ApiConfig& config) const {
    Result<ApiClientPtr> made = ApiClient::fromConfig(config, {}, std::make_shared<RealClock>());
    EXPECT_TRUE(made) << made.error().message;
    return made ? std::move(*made) : nullptr;
  }

  TempDir dir_;
  TempDir other_ca_;
  std::unique_ptr<ApiServerSimulator> simulator_;
};

TEST_F(ApiClientTest, CreateGetListDeleteAResourceSlice) {
  ApiClientPtr api = client(config());
  ApiResult<json> created = api->create(slicesPath(), slice("node-a-rdma", "node-a", "rdma"));
  ASSERT_TRUE(created) << describe(created.error());
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE((*created)["metadata"]["creationTimestamp"].get<std::string>().empty());
  EXPECT_EQ((*created)["metadata"]["resourceVersion"],
            std::to_string(simulator_->resourceVersion()));

  ApiResult<json> got = api->get(slicePath("node-a-rdma"));
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(*got, *created);

  ApiResult<ObjectList> listed = api->list(slicesPath());
  ASSERT_TRUE(listed) << describe(listed.error());
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(listed->items[0]["metadata"]["name"], "node-a-rdma");
  EXPECT_EQ(listed->resource_version, std::to_string(simulator_->resourceVersion()));

  ApiResult<json> deleted = api->remove(slicePath("node-a-rdma"));
  ASSERT_TRUE(deleted) << describe(deleted.error());
  EXPECT_EQ((*deleted)["metadata"]["name"], "node-a-rdma");
  EXPECT_FALSE(simulator_->object("resourceslices", "", "node-a-rdma"));
}

TEST_F(ApiClientTest, NotFoundAndAlreadyExistsCarryTheServersStatus) {
  ApiClientPtr api = client(config());
  ApiResult<json> missing = api->get(slicePath("absent"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, 404);
  EXPECT_EQ(missing.error().reason, "NotFound");
  EXPECT_EQ(missing.error().message, R"(resourceslices.resource.k8s.io "absent" not found)");
  EXPECT_EQ(api->remove(slicePath("absent")).error().code, 404);

  ASSERT_TRUE(api->create(slicesPath(), slice("s", "node-a", "rdma")));
  ApiResult<json> again = api->create(slicesPath(), slice("s", "node-a", "rdma"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, 409);
  EXPECT_EQ(again.error().reason, "AlreadyExists");
  EXPECT_EQ(again.error().message, R"(resourceslices.resource.k8s.io "s" already exists)");
}

TEST_F(ApiClientTest, GenerateNameGivesAFreshName) {
  ApiClientPtr api = client(config());
  json object = slice("", "node-a", "rdma");
  object["metadata"].erase("name");
  object["metadata"]["generateName"] = "node-a-rdma.kube-rdma.io-";
  ApiResult<json> created = api->create(slicesPath(), object);
  ASSERT_TRUE(created) << describe(created.error());
  const std::string name = (*created)["metadata"]["name"];
  EXPECT_EQ(name.size(), std::string("node-a-rdma.kube-rdma.io-").size() + 5);
  EXPECT_TRUE(api->get(slicePath(name)));
}

TEST_F(ApiClientTest, ListSelectsByFields) {
  ApiClientPtr api = client(config());
  ASSERT_TRUE(api->create(slicesPath(), slice("a-rdma", "node-a", "rdma.kube-rdma.io")));
  ASSERT_TRUE(api->create(slicesPath(), slice("a-gpu", "node-a", "gpu.nvidia.com")));
  ASSERT_TRUE(api->create(slicesPath(), slice("b-rdma", "node-b", "rdma.kube-rdma.io")));

  ApiResult<ObjectList> mine =
      api->list(slicesPath(), {"spec.nodeName=node-a,spec.driver=rdma.kube-rdma.io"});
  ASSERT_TRUE(mine) << describe(mine.error());
  ASSERT_EQ(mine->items.size(), 1u);
  EXPECT_EQ(mine->items[0]["metadata"]["name"], "a-rdma");

  ApiResult<ObjectList> unsupported = api->list(slicesPath(), {"spec.pool.name=node-a"});
  ASSERT_FALSE(unsupported);
  EXPECT_EQ(unsupported.error().code, 400);
  EXPECT_EQ(unsupported.error().message, "field label not supported: spec.pool.name");
}

TEST_F(ApiClientTest, NamespacedClaimsAndTheirTemplates) {
  ApiClientPtr api = client(config());
  const json claim = {{"metadata", {{"name", "nic"}}},
                      {"spec", {{"devices", {{"requests", json::array()}}}}}};
  ASSERT_TRUE(api->create(*collectionPath(kResourceClaims, "team-a"), claim));
  ASSERT_TRUE(api->create(*collectionPath(kResourceClaimTemplates, "team-a"), claim));
  ApiResult<json> got = api->get(*objectPath(kResourceClaims, "team-a", "nic"));
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ((*got)["metadata"]["namespace"], "team-a");
  EXPECT_EQ((*got)["kind"], "ResourceClaim");
  EXPECT_EQ(api->get(*objectPath(kResourceClaims, "team-b", "nic")).error().code, 404);
  ApiResult<ObjectList> everywhere = api->list(*collectionPath(kResourceClaims, ""));
  ASSERT_TRUE(everywhere);
  EXPECT_EQ(everywhere->items.size(), 1u);
}

TEST_F(ApiClientTest, AStaleResourceVersionIsAConflict) {
  ApiClientPtr api = client(config());
  json created = *api->create(slicesPath(), slice("s", "node-a", "rdma"));
  json first = created;
  first["spec"]["pool"]["generation"] = 2;
  ApiResult<json> updated = api->update(slicePath("s"), first);
  ASSERT_TRUE(updated) << describe(updated.error());
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);

  json stale = created; // still carries the version before the update
  stale["spec"]["pool"]["generation"] = 3;
  ApiResult<json> refused = api->update(slicePath("s"), stale);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 409);
  EXPECT_EQ(refused.error().reason, "Conflict");
  EXPECT_EQ(
      refused.error().message,
      R"(Operation cannot be fulfilled on resourceslices.resource.k8s.io "s": the object has been modified; please apply your changes to the latest version and try again)");
}

TEST_F(ApiClientTest, KeepAliveServesManyRequestsOnOneConnection) {
  ApiClientPtr api = client(config());
  ASSERT_TRUE(api->create(slicesPath(), slice("s", "node-a", "rdma")));
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(api->get(slicePath("s")));
  }
  EXPECT_EQ(simulator_->requestCount(), 21u);
  EXPECT_EQ(simulator_->connectionCount(), 1u);
}

TEST_F(ApiClientTest, NoServerIsAnErrorThatSaysItCouldNotConnect) {
  ApiConfig gone = config();
  const std::string server = gone.server;
  simulator_.reset(); // nothing listens on its port any more
  ApiResult<json> unreachable = client(gone)->get(slicePath("s"));
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code, 0);
  EXPECT_EQ(unreachable.error().message,
            "GET " + server + slicePath("s") + ": cannot connect (no route, refused or timed out)");
}

TEST_F(ApiClientTest, AWrongOrMissingTokenIsUnauthorized) {
  ApiConfig wrong = config();
  wrong.token = "guessed";
  ApiResult<json> refused = client(wrong)->get(slicePath("s"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 401);
  EXPECT_EQ(refused.error().reason, "Unauthorized");
  EXPECT_EQ(refused.error().message, "Unauthorized");
  ApiConfig none = config();
  none.token.clear();
  EXPECT_EQ(client(none)->get(slicePath("s")).error().code, 401);
}

TEST_F(ApiClientTest, AForbiddenMessageIsPassedOnVerbatim) {
  simulator_->allow(kUser, "get", "resourceclaims");
  ApiResult<json> refused = client(config())->remove(slicePath("node-b-rdma"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 403);
  EXPECT_EQ(describe(refused.error()),
            "HTTP 403 Forbidden: resourceslices.resource.k8s.io \"node-b-rdma\" is forbidden: "
            "User \"system:serviceaccount:kube-rdma:rdma-dra-driver\" cannot delete resource "
            "\"resourceslices\" in API group \"resource.k8s.io\" at the cluster scope");
}

TEST_F(ApiClientTest, AClientCertificateAuthenticatesAsItsCommonName) {
  ApiConfig certificate = config();
  certificate.token.clear();
  certificate.client_certificate_pem = readFile(dir_.path() + "/alice.crt");
  certificate.client_key_pem = readFile(dir_.path() + "/alice.key");
  simulator_->allow("alice", "get", "nodes");
  simulator_->put("nodes", {{"metadata", {{"name", "node-a"}}}});
  ApiClientPtr api = client(certificate);
  ApiResult<json> node = api->get(*objectPath(kNodes, "", "node-a"));
  ASSERT_TRUE(node) << describe(node.error());
  EXPECT_EQ((*node)["kind"], "Node");
  EXPECT_THAT(api->list(*collectionPath(kNodes, "")).error().message,
              HasSubstr("User \"alice\" cannot list resource \"nodes\""));
}

TEST_F(ApiClientTest, AClientKeyOfAnotherCertificateIsRefusedUpFront) {
  ApiConfig mismatched = config();
  mismatched.client_certificate_pem = readFile(dir_.path() + "/alice.crt");
  mismatched.client_key_pem = readFile(dir_.path() + "/apiserver.key");
  Result<ApiClientPtr> made = ApiClient::fromConfig(mismatched, {}, std::make_shared<RealClock>());
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().message, "client key does not belong to the client certificate");
  ApiConfig no_ca = config();
  no_ca.ca_pem = "not a certificate";
  EXPECT_EQ(ApiClient::fromConfig(no_ca, {}, std::make_shared<RealClock>()).error().message,
            "certificate authority: no PEM certificate in it");
}

TEST_F(ApiClientTest, AServerCertificateFromAnotherCaIsRefused) {
  ApiConfig other = config();
  other.ca_pem = readFile(other_ca_.path() + "/ca.crt");
  ApiResult<json> refused = client(other)->get(slicePath("s"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 0);
  EXPECT_THAT(refused.error().message,
              HasSubstr("GET https://127.0.0.1:" + std::to_string(simulator_->port()) +
                        "/apis/resource.k8s.io/v1/resourceslices/s: the server's certificate is "
                        "not trusted: "));
  EXPECT_EQ(simulator_->requestCount(), 0u);
}

// OpenSSL's default trust store is SSL_CERT_FILE when set: here it holds the simulator's CA.
class SystemTrustStore {
public:
  explicit SystemTrustStore(const std::string& ca_file) {
    ::setenv("SSL_CERT_FILE", ca_file.c_str(), 1);
  }
  ~SystemTrustStore() { ::unsetenv("SSL_CERT_FILE"); }
};

TEST_F(ApiClientTest, WithAConfiguredCaTheSystemTrustStoreDoesNotCount) {
  const SystemTrustStore system(dir_.path() + "/ca.crt");
  ApiConfig other = config();
  other.ca_pem = readFile(other_ca_.path() + "/ca.crt");
  ApiResult<json> refused = client(other)->get(slicePath("s"));
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("the server's certificate is not trusted"));
}

TEST_F(ApiClientTest, WithoutAConfiguredCaTheSystemTrustStoreVerifies) {
  const SystemTrustStore system(dir_.path() + "/ca.crt");
  ApiConfig no_ca = config();
  no_ca.ca_pem.clear();
  EXPECT_EQ(client(no_ca)->get(slicePath("s")).error().code, 404);
}

TEST_F(ApiClientTest, OverloadAnswersCarryTheirStatusAndRetryAfter) {
  ApiClientPtr api = client(config());
  simulator_->failNext(1, 429);
  ApiResult<json> throttled = api->get(slicePath("s"));
  ASSERT_FALSE(throttled);
  EXPECT_EQ(throttled.error().code, 429);
  EXPECT_EQ(throttled.error().reason, "TooManyRequests");
  EXPECT_EQ(throttled.error().retry_after, std::chrono::seconds(1)); // the header's
  simulator_->failNext(1, 500);
  ApiResult<json> failed = api->get(slicePath("s"));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, 500);
  EXPECT_EQ(failed.error().message, "Internal error occurred: injected by the test");
  EXPECT_EQ(failed.error().retry_after, std::chrono::seconds(0));
  EXPECT_EQ(api->get(slicePath("s")).error().code, 404); // served again
}

TEST_F(ApiClientTest, ARotatedTokenFileIsReadAgainAfterA401) {
  TempDir tokens;
  const std::string token_file = tokens.path() + "/token";
  std::ofstream(token_file) << "old-token\n";
  simulator_->addToken("old-token", kUser);
  ApiConfig from_file = config();
  from_file.token.clear();
  from_file.token_file = token_file;
  ApiClientPtr api = client(from_file);
  ASSERT_EQ(api->get(slicePath("s")).error().code, 404);

  // The kubelet writes a new token and the old one stops being accepted.
  std::ofstream(token_file) << "new-token\n";
  simulator_->removeToken("old-token");
  simulator_->addToken("new-token", kUser);
  const size_t before = simulator_->requestCount();
  EXPECT_EQ(api->get(slicePath("s")).error().code, 404);
  EXPECT_EQ(simulator_->requestCount(), before + 2); // one 401, then the new token
}

TEST_F(ApiClientTest, AKubeconfigFileWithRelativePathsConnects) {
  std::ofstream(dir_.path() + "/token") << kToken;
  std::ofstream(dir_.path() + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
         "contexts:\n- name: c\n  context: {cluster: sim, user: driver}\n"
         "clusters:\n- name: sim\n  cluster:\n    server: "
      << simulator_->url()
      << "\n    certificate-authority: ca.crt\n"
         "users:\n- name: driver\n  user:\n    tokenFile: token\n";
  Result<ApiConfig> loaded = loadKubeconfig(dir_.path() + "/kubeconfig");
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(client(*loaded)->get(slicePath("s")).error().code, 404);
}

// Runs a watch on its own thread, collecting "TYPE name" per event.
class WatchRunner {
public:
  WatchRunner(ApiClient& api, const WatchOptions& options) {
    thread_ = std::thread([this, &api, options] {
      result_ = std::make_unique<ApiResult<std::string>>(api.watch(
          *collectionPath(kResourceSlices, ""), options,
          [this](const WatchEvent& event) {
            std::lock_guard<std::mutex> lock(mutex_);
            events_.push_back(event.type + " " +
                              event.object["metadata"]["name"].get<std::string>());
          },
          stop_));
      done_ = true;
    });
  }
  ~WatchRunner() { finish(); }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }
  size_t count() const { return events().size(); }
  bool done() const { return done_; }
  const ApiResult<std::string>& finish() {
    stop_.stop();
    if (thread_.joinable()) {
      thread_.join();
    }
    return *result_;
  }

private:
  WatchStop stop_;
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
  std::atomic<bool> done_{false};
  std::unique_ptr<ApiResult<std::string>> result_;
  std::thread thread_;
};

TEST_F(ApiClientTest, WatchDeliversAddedModifiedDeletedFromTheListsVersion) {
  ApiClientPtr api = client(config());
  ASSERT_TRUE(api->create(slicesPath(), slice("before", "node-a", "rdma")));
  const std::string version = api->list(slicesPath())->resource_version;
  WatchRunner watch(*api, {version, "", 60});
  json created = *api->create(slicesPath(), slice("s", "node-a", "rdma"));
  created["spec"]["pool"]["generation"] = 2;
  ASSERT_TRUE(api->update(slicePath("s"), created));
  ASSERT_TRUE(api->remove(slicePath("s")));
  ASSERT_TRUE(eventually([&] { return watch.count() == 3; })) << watch.count();
  const ApiResult<std::string>& ended = watch.finish();
  ASSERT_TRUE(ended) << describe(ended.error());
  EXPECT_EQ(*ended, std::to_string(simulator_->resourceVersion()));
  EXPECT_EQ(watch.events(), (std::vector<std::string>{"ADDED s", "MODIFIED s", "DELETED s"}));
}

TEST_F(ApiClientTest, WatchWithoutAVersionStartsWithTheCurrentState) {
  ApiClientPtr api = client(config());
  ASSERT_TRUE(api->create(slicesPath(), slice("a", "node-a", "rdma")));
  WatchRunner watch(*api, {"", "", 60});
  ASSERT_TRUE(eventually([&] { return watch.count() == 1; }));
  EXPECT_EQ(watch.events(), std::vector<std::string>{"ADDED a"});
}

TEST_F(ApiClientTest, WatchFiltersByFieldSelectorAndSeesObjectsLeaveIt) {
  ApiClientPtr api = client(config());
  // From the list's version: a watch without one could reach the server after the changes below
  // and start from a state with nothing on node-a.
  const std::string version = api->list(slicesPath())->resource_version;
  WatchRunner watch(*api, {version, "spec.nodeName=node-a", 60});
  ASSERT_TRUE(api->create(slicesPath(), slice("other", "node-b", "rdma")));
  json mine = *api->create(slicesPath(), slice("mine", "node-a", "rdma"));
  mine["spec"]["nodeName"] = "node-b";
  ASSERT_TRUE(api->update(slicePath("mine"), mine));
  ASSERT_TRUE(eventually([&] { return watch.count() == 2; }));
  EXPECT_EQ(watch.events(), (std::vector<std::string>{"ADDED mine", "DELETED mine"}));
}

TEST_F(ApiClientTest, WatchFromACompactedVersionTellsTheCallerToListAgain) {
  ApiClientPtr api = client(config());
  const std::string old_version = api->list(slicesPath())->resource_version;
  ASSERT_TRUE(api->create(slicesPath(), slice("a", "node-a", "rdma")));
  ASSERT_TRUE(api->create(slicesPath(), slice("b", "node-a", "rdma")));
  simulator_->compactHistory();
  WatchStop stop;
  ApiResult<std::string> gone = api->watch(
      slicesPath(), {old_version, "", 60}, [](const WatchEvent&) {}, stop);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, 410);
  EXPECT_EQ(gone.error().reason, "Expired");
  EXPECT_THAT(gone.error().message, HasSubstr("too old resource version: " + old_version));
}

TEST_F(ApiClientTest, WatchEndsWithTheServersTimeoutAndResumesFromItsVersion) {
  ApiClientPtr api = client(config());
  ASSERT_TRUE(api->create(slicesPath(), slice("a", "node-a", "rdma")));
  WatchStop stop;
  std::vector<std::string> seen;
  ApiResult<std::string> ended = api->watch(
      slicesPath(), {"", "", 1}, [&](const WatchEvent& event) { seen.push_back(event.type); },
      stop);
  ASSERT_TRUE(ended) << describe(ended.error());
  EXPECT_EQ(seen, std::vector<std::string>{"ADDED"});
  EXPECT_EQ(*ended, std::to_string(simulator_->resourceVersion()));
}

TEST_F(ApiClientTest, AWatchStoppedBeforeItStartsSendsNothing) {
  ApiClientPtr api = client(config());
  WatchStop stop;
  stop.stop();
  ApiResult<std::string> ended = api->watch(
      slicesPath(), {"7", "", 600}, [](const WatchEvent&) {}, stop);
  ASSERT_TRUE(ended);
  EXPECT_EQ(*ended, "7");
  EXPECT_EQ(simulator_->requestCount(), 0u);
}

TEST_F(ApiClientTest, AnUnauthorizedWatchIsAnError) {
  ApiConfig wrong = config();
  wrong.token = "guessed";
  WatchStop stop;
  ApiResult<std::string> refused = client(wrong)->watch(
      slicesPath(), {}, [](const WatchEvent&) {}, stop);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 401);
  EXPECT_EQ(refused.error().message, "Unauthorized");
}

TEST_F(ApiClientTest, OnErrorHearsOfEveryFailedRequestWithItsCode) {
  std::vector<int> codes;
  ClientOptions options;
  options.on_error = [&codes](const ApiError& error) { codes.push_back(error.code); };
  Result<ApiClientPtr> api =
      ApiClient::fromConfig(config(), options, std::make_shared<RealClock>());
  ASSERT_TRUE(api) << api.error().message;
  ASSERT_TRUE((*api)->create(slicesPath(), slice("node-a-rdma", "node-a", "rdma")));
  EXPECT_FALSE((*api)->get(slicePath("absent")));
  simulator_->failNext(1, 503);
  EXPECT_FALSE((*api)->list(slicesPath()));
  ASSERT_TRUE((*api)->get(slicePath("node-a-rdma")));
  EXPECT_EQ(codes, (std::vector<int>{404, 503}));
}

} // namespace
} // namespace kube_rdma
