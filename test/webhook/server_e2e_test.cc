// End to end over real TLS: the rdma-webhook binary with a CA and serving certificates made by
// openssl in a temp dir, mounted the way the kubelet mounts Secrets and ConfigMaps (files behind
// a `..data` symlink swapped atomically), and httplib's SSLClient verifying against the CA.
#include <gtest/gtest.h>

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "test/apiserver/api_server_simulator.h"
#include "test/webhook/admission_test_support.h"
#include "test/webhook/test_certificates.h"

namespace kube_rdma {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string readText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A directory laid out like a kubelet volume: <dir>/<name> -> ..data/<name>, ..data -> a
// timestamped directory; publish() swaps ..data in one rename.
class KubeletVolume {
public:
  explicit KubeletVolume(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }

  void publish(const std::map<std::string, std::string>& files) {
    const fs::path version = dir_ / ("..version" + std::to_string(++generation_));
    fs::create_directories(version);
    for (const auto& [name, content] : files) {
      std::ofstream(version / name) << content;
      if (!fs::is_symlink(dir_ / name)) {
        fs::create_symlink(fs::path("..data") / name, dir_ / name);
      }
    }
    fs::create_symlink(version.filename(), dir_ / "..data_tmp");
    fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  }
  fs::path path(const std::string& name) const { return dir_ / name; }

private:
  fs::path dir_;
  int generation_ = 0;
};

class WebhookProcess {
public:
  WebhookProcess(const std::vector<std::string>& args, const fs::path& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive a test run that was killed
      std::freopen(log.c_str(), "w", stderr);
      std::vector<char*> argv;
      std::string binary = RDMA_WEBHOOK_BINARY;
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (std::string& a : copy) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
  }
  ~WebhookProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The port from the "serving" log line; 0 if the process did not get there in time.
  int waitForPort() {
    const std::regex serving("serving address=[^ ]*:([0-9]+)");
    for (int i = 0; i < 2400; ++i) {
      std::smatch m;
      const std::string log = readText(log_);
      if (std::regex_search(log, m, serving)) {
        return std::stoi(m[1]);
      }
      std::this_thread::sleep_for(25ms);
    }
    return 0;
  }
  void signal(int sig) { kill(pid_, sig); }
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string log() const { return readText(log_); }

private:
  fs::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

json podReview(const std::string& uid) {
  return test_support::podCreateReview(json::parse(readText(fs::path(KUBE_RDMA_WEBHOOK_TESTDATA) /
                                                            "pods" / "pytorchjob-master.json")),
                                       uid);
}

// The subject CN of the certificate the server presents to a new connection, and whether a
// handshake limited to `max_version` succeeds at all.
struct Handshake {
  bool ok = false;
  std::string common_name;
};

Handshake handshake(int port, int max_version) {
  Handshake result;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  // Level 0 lets this client offer TLS 1.0/1.1, so a refusal is the server's doing.
  SSL_CTX_set_security_level(ctx, 0);
  SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0");
  SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
  SSL_CTX_set_max_proto_version(ctx, max_version);
  BIO* bio = BIO_new_ssl_connect(ctx);
  BIO_set_conn_hostname(bio, ("127.0.0.1:" + std::to_string(port)).c_str());
  if (BIO_do_connect(bio) == 1 && BIO_do_handshake(bio) == 1) {
    SSL* ssl = nullptr;
    BIO_get_ssl(bio, &ssl);
    if (X509* peer = SSL_get1_peer_certificate(ssl)) {
      char cn[256] = {0};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
      result.common_name = cn;
      X509_free(peer);
    }
    result.ok = true;
  }
  BIO_free_all(bio);
  SSL_CTX_free(ctx);
  return result;
}

// Sends raw request bytes on a new TLS connection and returns the response's status line.
std::string statusLine(int port, const std::string& request) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  BIO* bio = BIO_new_ssl_connect(ctx);
  BIO_set_conn_hostname(bio, ("127.0.0.1:" + std::to_string(port)).c_str());
  std::string response;
  if (BIO_do_connect(bio) == 1 &&
      BIO_write(bio, request.data(), static_cast<int>(request.size())) > 0) {
    char buffer[512];
    int n = 0;
    while (response.find("\r\n") == std::string::npos &&
           (n = BIO_read(bio, buffer, sizeof(buffer))) > 0) {
      response.append(buffer, static_cast<size_t>(n));
    }
  }
  BIO_free_all(bio);
  SSL_CTX_free(ctx);
  return response.substr(0, response.find("\r\n"));
}

// Writes each of `parts` as its own TLS record on a new connection and returns all the server
// sends until it closes.
std::string untilClosed(int port, const std::vector<std::string>& parts) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  BIO* bio = BIO_new_ssl_connect(ctx);
  BIO_set_conn_hostname(bio, ("127.0.0.1:" + std::to_string(port)).c_str());
  std::string response;
  bool sent = BIO_do_connect(bio) == 1;
  for (const std::string& part : parts) {
    sent = sent && BIO_write(bio, part.data(), static_cast<int>(part.size())) > 0;
  }
  if (sent) {
    char buffer[512];
    for (int n; (n = BIO_read(bio, buffer, sizeof(buffer))) > 0;) {
      response.append(buffer, static_cast<size_t>(n));
    }
  }
  BIO_free_all(bio);
  SSL_CTX_free(ctx);
  return response;
}

// One keep-alive TLS connection speaking raw HTTP/1.1: a request is sent as written, and an
// answer is read whole (headers, then Content-Length bytes of body) before the next is sent.
class RawConnection {
public:
  explicit RawConnection(int port) {
    bio_ = BIO_new_ssl_connect(ctx_);
    BIO_set_conn_hostname(bio_, ("127.0.0.1:" + std::to_string(port)).c_str());
    connected_ = BIO_do_connect(bio_) == 1;
  }
  ~RawConnection() {
    BIO_free_all(bio_);
    SSL_CTX_free(ctx_);
  }

  bool send(const std::string& bytes) {
    return connected_ && BIO_write(bio_, bytes.data(), static_cast<int>(bytes.size())) > 0;
  }
  // The next answer's head (status line and headers) and body; empty when the connection closed
  // first. A held answer never comes: the server cuts the connection after its request timeout.
  std::string answer(bool head_only = false) {
    size_t end = std::string::npos;
    while ((end = buffered_.find("\r\n\r\n")) == std::string::npos && fill()) {
    }
    if (end == std::string::npos) {
      return "";
    }
    const std::string head = buffered_.substr(0, end + 4);
    size_t length = 0;
    std::smatch m;
    if (!head_only &&
        std::regex_search(head, m,
                          std::regex("\r\nContent-Length: ([0-9]+)\r\n", std::regex::icase))) {
      length = std::stoul(m[1]);
    }
    while (buffered_.size() < head.size() + length && fill()) {
    }
    if (buffered_.size() < head.size() + length) {
      return "";
    }
    std::string whole = buffered_.substr(0, head.size() + length);
    buffered_.erase(0, whole.size());
    return whole;
  }

private:
  bool fill() {
    char buffer[4096];
    const int n = connected_ ? BIO_read(bio_, buffer, sizeof(buffer)) : 0;
    if (n <= 0) {
      return false;
    }
    buffered_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  SSL_CTX* ctx_ = SSL_CTX_new(TLS_client_method());
  BIO* bio_ = nullptr;
  bool connected_ = false;
  std::string buffered_;
};

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

class WebhookE2E : public testing::Test {
protected:
  static void SetUpTestSuite() {
    // A server that refuses a body closes while the client still writes it: EPIPE, not a signal.
    signal(SIGPIPE, SIG_IGN);
    dir_ =
        new fs::path(fs::temp_directory_path() / ("rdma-webhook-e2e-" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    ASSERT_EQ(makeTestCertificates(*dir_, {"serving-a", "serving-b", "apiserver"}), "");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  void SetUp() override {
    const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
    work_ = *dir_ / test;
    fs::remove_all(work_);
    tls_ = std::make_unique<KubeletVolume>(work_ / "tls");
    policy_ = std::make_unique<KubeletVolume>(work_ / "policy");
    publishCertificate("serving-a");
    policy_->publish({{"policy.json", "{}"}});
  }

  void publishCertificate(const std::string& name) {
    tls_->publish({{"tls.crt", readText(*dir_ / (name + ".crt"))},
                   {"tls.key", readText(*dir_ / (name + ".key"))}});
  }

  std::unique_ptr<WebhookProcess> start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--tls-cert-file",
                                     tls_->path("tls.crt").string(),
                                     "--tls-private-key-file",
                                     tls_->path("tls.key").string(),
                                     "--listen-address",
                                     "127.0.0.1:0",
                                     "--policy",
                                     policy_->path("policy.json"),
                                     "--shutdown-delay",
                                     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto process = std::make_unique<WebhookProcess>(args, work_ / "webhook.log");
    port_ = process->waitForPort();
    EXPECT_NE(port_, 0) << process->log();
    return process;
  }

  std::unique_ptr<httplib::SSLClient> client() const {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    c->set_ca_cert_path((*dir_ / "ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    c->set_read_timeout(5, 0);
    return c;
  }

  // Posts one review; empty string when it went through and the reply is right, else why not.
  std::string review(httplib::SSLClient& c, const std::string& uid) const {
    auto res = c.Post("/mutate?timeout=5s", podReview(uid).dump(), "application/json");
    if (!res) {
      return "transport error " + httplib::to_string(res.error());
    }
    if (res->status != 200) {
      return "status " + std::to_string(res->status) + ": " + res->body;
    }
    const json reply = json::parse(res->body, nullptr, false);
    if (reply.is_discarded() || reply["response"]["uid"] != uid ||
        reply["response"]["allowed"] != true || reply["response"]["patchType"] != "JSONPatch") {
      return "bad reply " + res->body;
    }
    return "";
  }

  std::string metrics() const {
    auto res = client()->Get("/metrics");
    return res ? res->body : "";
  }

  // Waits for a condition that depends on the webhook noticing a file change or on requests
  // going through. The deadline is only there so a broken build ends; it is far above what any
  // step takes, even on a loaded machine.
  template <class F> bool eventually(F condition) const {
    for (int i = 0; i < 2400; ++i) {
      if (condition()) {
        return true;
      }
      std::this_thread::sleep_for(25ms);
    }
    return false;
  }

  static fs::path* dir_;
  fs::path work_;
  std::unique_ptr<KubeletVolume> tls_;
  std::unique_ptr<KubeletVolume> policy_;
  int port_ = 0;
};

fs::path* WebhookE2E::dir_ = nullptr;

TEST_F(WebhookE2E, ServesReviewsHealthAndReadinessOverVerifiedTls) {
  auto process = start();
  auto c = client();
  EXPECT_EQ(review(*c, "uid-1"), "");
  auto ready = c->Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  auto healthy = c->Get("/healthz");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
  const std::string m = metrics();
  EXPECT_NE(m.find("rdma_webhook_requests_total{outcome=\"mutated\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("rdma_webhook_mutations_total{kind=\"ipc-lock\"} 1"), std::string::npos);
  EXPECT_NE(m.find("rdma_webhook_policy_generation 1"), std::string::npos);
}

TEST_F(WebhookE2E, CertificateRotatesMidStreamWithoutAFailedRequest) {
  auto process = start();
  ASSERT_EQ(handshake(port_, TLS1_3_VERSION).common_name, "serving-a");

  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::vector<std::string> failures;
  // Joined on every path out of the test, a failed assertion included.
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread thread;
    ~Joiner() {
      stop = true;
      if (thread.joinable()) {
        thread.join();
      }
    }
  } stream{stop, std::thread([&] {
             // A new client every 20 requests, so new handshakes happen throughout the rotation.
             while (!stop) {
               auto c = client();
               for (int i = 0; i < 20 && !stop; ++i) {
                 std::string error = review(*c, "uid-" + std::to_string(sent.fetch_add(1)));
                 if (!error.empty()) {
                   failures.push_back(error);
                 }
               }
             }
           })};
  ASSERT_TRUE(eventually([&] { return sent > 100; }));
  publishCertificate("serving-b");
  EXPECT_TRUE(eventually([&] {
    return handshake(port_, TLS1_3_VERSION).common_name == "serving-b";
  })) << process->log();
  const int at_rotation = sent;
  ASSERT_TRUE(eventually([&] { return sent > at_rotation + 100; }));
  stop = true;
  stream.thread.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
  EXPECT_GT(sent, 200);
}

TEST_F(WebhookE2E, BadCertificateKeepsTheLastGoodOneAndIsReported) {
  auto process = start();
  // A key that belongs to another certificate: rejected as a pair.
  tls_->publish({{"tls.crt", readText(*dir_ / "serving-b.crt")},
                 {"tls.key", readText(*dir_ / "serving-a.key")}});
  EXPECT_TRUE(eventually([&] {
    return metrics().find("rdma_webhook_certificate_reload_errors_total 0") == std::string::npos;
  }));
  EXPECT_EQ(handshake(port_, TLS1_3_VERSION).common_name, "serving-a");
  EXPECT_EQ(review(*client(), "uid-after-bad-cert"), "");
  EXPECT_NE(process->log().find("does not match certificate"), std::string::npos);
}

TEST_F(WebhookE2E, Tls10And11AreRefusedAndTls12IsAccepted) {
  auto process = start();
  EXPECT_FALSE(handshake(port_, TLS1_VERSION).ok);
  EXPECT_FALSE(handshake(port_, TLS1_1_VERSION).ok);
  EXPECT_TRUE(handshake(port_, TLS1_2_VERSION).ok);
}

TEST_F(WebhookE2E, PolicyReloadsOnConfigMapSwapAndABadOneKeepsTheLastGood) {
  auto process = start();
  policy_->publish({{"policy.json", R"({"env": [{"name": "NCCL_DEBUG", "value": "INFO"}]})"}});
  ASSERT_TRUE(eventually([&] {
    return metrics().find("rdma_webhook_policy_generation 2") != std::string::npos;
  })) << process->log();
  auto c = client();
  auto res = c->Post("/mutate", podReview("uid-p").dump(), "application/json");
  ASSERT_TRUE(res);
  const json reply = json::parse(res->body);
  const auto decoded = test_support::decodeBase64(reply["response"]["patch"]);
  ASSERT_TRUE(decoded.has_value());
  const std::string& patch = *decoded;
  EXPECT_NE(patch.find("NCCL_DEBUG"), std::string::npos);
  EXPECT_EQ(patch.find("NCCL_IB_TIMEOUT"), std::string::npos); // env replaced the defaults

  policy_->publish({{"policy.json", R"({"ipcLock": "yes"})"}});
  ASSERT_TRUE(eventually([&] {
    return metrics().find("rdma_webhook_policy_reload_errors_total 1") != std::string::npos;
  }));
  EXPECT_NE(metrics().find("rdma_webhook_policy_generation 2"), std::string::npos);
  EXPECT_EQ(client()->Get("/readyz")->status, 200);
  EXPECT_NE(process->log().find("$.ipcLock"), std::string::npos);
}

TEST_F(WebhookE2E, APolicyResourceTheShippedConfigurationNeverSendsIsReported) {
  auto process = start();
  EXPECT_NE(metrics().find("rdma_webhook_policy_resources_never_sent 0"), std::string::npos);
  policy_->publish(
      {{"policy.json", R"({"resources": ["rdma/hca", "rdma/shared", "example.com/roce"]})"}});
  ASSERT_TRUE(eventually([&] {
    return metrics().find("rdma_webhook_policy_resources_never_sent 1") != std::string::npos;
  })) << process->log();
  EXPECT_NE(process->log().find("example.com/roce"), std::string::npos) << process->log();
}

TEST_F(WebhookE2E, NotReadyUntilAValidPolicyIsLoaded) {
  policy_->publish({{"policy.json", R"({"resources": []})"}});
  auto process = start();
  auto not_ready = client()->Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_NE(not_ready->body.find("no valid policy loaded"), std::string::npos);
  policy_->publish({{"policy.json", "{}"}});
  EXPECT_TRUE(eventually([&] {
    auto ready = client()->Get("/readyz");
    return ready && ready->status == 200;
  })) << process->log();
}

TEST_F(WebhookE2E, BodiesWithoutALengthOrOverTheCapAreRefusedBeforeReading) {
  auto process = start();
  // Only the headers are sent: an answer proves the server decided before reading any body.
  const std::string head = "POST /mutate HTTP/1.1\r\nHost: webhook\r\n"
                           "Content-Type: application/json\r\n";
  EXPECT_EQ(statusLine(port_, head + "Transfer-Encoding: chunked\r\n\r\n"),
            "HTTP/1.1 411 Length Required");
  EXPECT_EQ(statusLine(port_, head + "\r\n"), "HTTP/1.1 411 Length Required");
  EXPECT_EQ(statusLine(port_, head + "Content-Length: 7340032\r\n\r\n"),
            "HTTP/1.1 413 Payload Too Large");
  auto garbage = client()->Post("/mutate", "not json", "application/json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
  EXPECT_NE(garbage->body.find("not JSON"), std::string::npos);
  // The server is still fine afterwards.
  EXPECT_EQ(review(*client(), "uid-after"), "");
}

// A refused request's body is never read, so it must not be read as the next request either: a
// client could smuggle one past whatever sits in front of the webhook.
TEST_F(WebhookE2E, ARefusedRequestClosesItsConnectionSoItsBodyIsNeverReadAsARequest) {
  auto process = start();
  const std::string head = "POST /mutate HTTP/1.1\r\nHost: webhook\r\n"
                           "Content-Type: application/json\r\n";
  const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n";
  // The body in a record of its own, as a client writing headers and body separately sends it.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{head + "Transfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n" + smuggled}, "411"},
      {{head + "\r\n", smuggled}, "411"},
      {{head + "Content-Length: 7340032\r\n\r\n", smuggled}, "413"},
      // The whole 7 MiB body written before the answer is read: the server discards it rather
      // than closing on unread bytes (a reset, which could lose the answer).
      {{head + "Content-Length: 7340032\r\n\r\n", std::string(7340032, ' ')}, "413"},
  };
  for (const auto& [parts, status] : cases) {
    const std::string answer = untilClosed(port_, parts);
    EXPECT_EQ(answer.rfind("HTTP/1.1 " + status, 0), 0u) << answer;
    EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
    EXPECT_EQ(count(answer, "HTTP/1.1 "), 1u) << "the body was answered as a request:\n" << answer;
  }
  EXPECT_EQ(review(*client(), "uid-after"), "");
}

// Every kind of answer, the routes' and the server's own, leaves before the next request is sent on
// the same connection, and answered requests keep a keep-alive connection clear of the request
// deadline.
TEST_F(WebhookE2E, EveryKindOfAnswerLeavesBeforeTheNextRequestOnAKeepAliveConnection) {
  auto process = start({"--request-timeout", "1"});
  const std::string body = podReview("uid-keep-alive").dump();
  const std::string post = "POST /mutate?timeout=5s HTTP/1.1\r\nHost: webhook\r\n";
  const auto length = [](const std::string& text) {
    return "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
  };
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n", "HTTP/1.1 200 "},
      {"GET /readyz HTTP/1.1\r\nHost: webhook\r\n\r\n", "HTTP/1.1 200 "},
      {"GET /metrics HTTP/1.1\r\nHost: webhook\r\n\r\n", "HTTP/1.1 200 "},
      {"GET /nowhere HTTP/1.1\r\nHost: webhook\r\n\r\n", "HTTP/1.1 404 "},
      {"DELETE /mutate HTTP/1.1\r\nHost: webhook\r\n\r\n", "HTTP/1.1 404 "},
      {post + "Content-Type: application/json\r\n" + length(body), "HTTP/1.1 200 "},
      {post + "Content-Type: application/json\r\n" + length("not json"), "HTTP/1.1 400 "},
      {post + "Content-Type: text/plain\r\n" + length(body), "HTTP/1.1 415 "},
      {post + "Content-Type: application/json\r\n" + length(body), "HTTP/1.1 200 "},
  };
  RawConnection connection(port_);
  for (const auto& [request, status] : requests) {
    ASSERT_TRUE(connection.send(request)) << request;
    const std::string answer = connection.answer();
    EXPECT_EQ(answer.rfind(status, 0), 0u) << request << "\n" << answer << process->log();
    EXPECT_EQ(count(answer, "Content-Length: "), 1u) << answer;
  }
  // A HEAD answer has headers only.
  ASSERT_TRUE(connection.send("HEAD /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n"));
  EXPECT_EQ(connection.answer(true).rfind("HTTP/1.1 200 ", 0), 0u);
  // A client that waits for 100 Continue before its body: the interim answer, then the final one
  // after the body.
  ASSERT_TRUE(connection.send(post +
                              "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                              "Content-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(connection.answer(true).rfind("HTTP/1.1 100 Continue", 0), 0u);
  ASSERT_TRUE(connection.send(body));
  EXPECT_EQ(connection.answer().rfind("HTTP/1.1 200 ", 0), 0u);
  // A request line that is not HTTP: 400, and the connection is closed.
  ASSERT_TRUE(connection.send("NONSENSE\r\n\r\n"));
  EXPECT_EQ(connection.answer().rfind("HTTP/1.1 400 ", 0), 0u);
  // Refusals before the body (411, 413) are answered and closed on their own connections.
  for (const auto& [head, status] : std::vector<std::pair<std::string, std::string>>{
           {"Transfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 411 "},
           {"\r\n", "HTTP/1.1 411 "},
           {"Content-Length: 7340032\r\n\r\n", "HTTP/1.1 413 "}}) {
    RawConnection refused(port_);
    ASSERT_TRUE(refused.send(post + "Content-Type: application/json\r\n" + head));
    EXPECT_EQ(refused.answer().rfind(status, 0), 0u) << head;
  }
  const std::string m = metrics();
  EXPECT_NE(m.find("rdma_webhook_connections_cut_total 0\n"), std::string::npos) << m;
}

// Requests sent before the previous answer came: in TLS records of their own, and in one record
// where the first request ends exactly where the server's first read of 4,096 bytes does, so the
// next request is already inside OpenSSL and the socket will not signal it.
TEST_F(WebhookE2E, PipelinedRequestsAreAnsweredInOrder) {
  auto process = start();
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: webhook\r\n";
  const std::string metrics_get = "GET /metrics HTTP/1.1\r\nHost: webhook\r\n\r\n";
  const std::string missing = "GET /nowhere HTTP/1.1\r\nHost: webhook\r\n\r\n";
  RawConnection separate(port_);
  ASSERT_TRUE(separate.send(get + "\r\n") && separate.send(missing) && separate.send(metrics_get));
  EXPECT_EQ(separate.answer().rfind("HTTP/1.1 200 ", 0), 0u) << process->log();
  EXPECT_EQ(separate.answer().rfind("HTTP/1.1 404 ", 0), 0u) << process->log();
  EXPECT_EQ(separate.answer().rfind("HTTP/1.1 200 ", 0), 0u) << process->log();

  const std::string padding_header = "X-Padding: ";
  const std::string first = get + padding_header +
                            std::string(4096 - get.size() - padding_header.size() - 4, 'a') +
                            "\r\n\r\n";
  ASSERT_EQ(first.size(), 4096u);
  RawConnection together(port_);
  ASSERT_TRUE(together.send(first + missing));
  EXPECT_EQ(together.answer().rfind("HTTP/1.1 200 ", 0), 0u) << process->log();
  EXPECT_EQ(together.answer().rfind("HTTP/1.1 404 ", 0), 0u) << process->log();
}

TEST_F(WebhookE2E, SigtermDrainsAnswersRequestsInFlightAndExitsCleanly) {
  auto process = start();
  auto c = client();
  ASSERT_EQ(review(*c, "uid-before"), "");
  process->signal(SIGTERM);
  EXPECT_TRUE(eventually([&] {
    auto ready = client()->Get("/readyz");
    return ready && ready->status == 503;
  }));
  // Still answering during the drain delay.
  EXPECT_EQ(review(*client(), "uid-draining"), "");
  EXPECT_EQ(process->wait(), 0);
  EXPECT_NE(process->log().find("stopped"), std::string::npos);
}

TEST_F(WebhookE2E, ReadsADraPodsClaimTemplateThroughItsKubeconfig) {
  ApiServerSimulator api(SimulatorTls{(*dir_ / "apiserver.crt").string(),
                                      (*dir_ / "apiserver.key").string(),
                                      (*dir_ / "ca.crt").string()});
  ASSERT_TRUE(api.start());
  api.addToken("webhook-token", "system:serviceaccount:kube-rdma:rdma-webhook");
  api.allow("system:serviceaccount:kube-rdma:rdma-webhook", "get", "resourceclaimtemplates");
  const fs::path dra = fs::path(KUBE_RDMA_WEBHOOK_TESTDATA) / "dra";
  api.put("resourceclaimtemplates", json::parse(readText(dra / "gpu-and-nic.template.json")));
  std::ofstream(work_ / "kubeconfig")
      << "apiVersion: v1\nkind: Config\n"
      << "clusters:\n- name: sim\n  cluster:\n    server: " << api.url()
      << "\n    certificate-authority: " << (*dir_ / "ca.crt").string() << "\n"
      << "users:\n- name: webhook\n  user:\n    token: webhook-token\n"
      << "contexts:\n- name: sim\n  context:\n    cluster: sim\n"
      << "    user: webhook\ncurrent-context: sim\n";
  auto webhook = start({"--kubeconfig", (work_ / "kubeconfig").string()});
  json pod = json::parse(readText(dra / "trainer.pod.json"));
  pod["spec"]["resourceClaims"].erase(1); // the template only: that is what this identity may read
  pod["spec"]["containers"].erase(2);
  auto res = client()->Post("/mutate", test_support::podCreateReview(pod, "uid-dra").dump(),
                            "application/json");
  ASSERT_TRUE(res) << webhook->log();
  ASSERT_EQ(res->status, 200) << res->body;
  const json reply = json::parse(res->body);
  ASSERT_TRUE(reply["response"].contains("patch")) << res->body << webhook->log();
  const json after =
      pod.patch(json::parse(test_support::decodeBase64(reply["response"]["patch"]).value()));
  const json& trainer = after["spec"]["containers"][0];
  EXPECT_NE(trainer.dump().find("IPC_LOCK"), std::string::npos) << trainer.dump();
  EXPECT_EQ(after["spec"]["containers"][1].dump().find("IPC_LOCK"), std::string::npos);
  EXPECT_GE(api.requestCount(), 1u);
}

} // namespace
} // namespace kube_rdma
