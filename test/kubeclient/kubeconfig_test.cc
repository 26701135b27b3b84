#include "kubeclient/kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

using ::testing::HasSubstr;

constexpr const char* kCaPem = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

// Files the kubeconfig may name, by absolute path.
class FakeFiles {
public:
  void add(const std::string& path, const std::string& content) { files_[path] = content; }
  ReadFile reader() const {
    return [this](const std::filesystem::path& path) -> Result<std::string> {
      const auto found = files_.find(path.string());
      if (found == files_.end()) {
        return makeError("cannot read " + path.string());
      }
      return found->second;
    };
  }

private:
  std::map<std::string, std::string> files_;
};

// One cluster, one user, one context, with the given cluster and user fields.
std::string kubeconfig(const std::string& cluster_fields, const std::string& user_fields) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "current-context: driver\n"
         "contexts:\n"
         "- name: other\n"
         "  context: {cluster: nowhere, user: nobody}\n"
         "- name: driver\n"
         "  context:\n"
         "    cluster: lab\n"
         "    user: rdma\n"
         "    namespace: kube-rdma\n"
         "clusters:\n"
         "- name: lab\n"
         "  cluster:\n" +
         cluster_fields +
         "users:\n"
         "- name: rdma\n"
         "  user:\n" +
         user_fields;
}

const std::string kServer = "    server: https://10.0.0.1:6443\n";
// "CA" base64-encoded inside a PEM frame.
const std::string kCaData = "    certificate-authority-data: "
                            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRF"
                            "LS0tLS0K\n";

TEST(KubeconfigTest, CertificateAuthorityDataAndTokenOfTheCurrentContext) {
  const FakeFiles files;
  Result<ApiConfig> config = parseKubeconfig(kubeconfig(kServer + kCaData, "    token: abc.def\n"),
                                             "/cfg", files.reader());
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token, "abc.def");
  EXPECT_EQ(config->token_file, "");
}

TEST(KubeconfigTest, RelativeFilesAreTakenFromTheKubeconfigsDirectory) {
  FakeFiles files;
  files.add("/cfg/pki/ca.crt", kCaPem);
  files.add("/cfg/pki/client.crt", "CERT");
  files.add("/etc/keys/client.key", "KEY");
  Result<ApiConfig> config =
      parseKubeconfig(kubeconfig(kServer + "    certificate-authority: pki/ca.crt\n",
                                 "    tokenFile: tokens/driver\n"
                                 "    client-certificate: pki/client.crt\n"
                                 "    client-key: /etc/keys/client.key\n"),
                      "/cfg", files.reader());
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token_file, "/cfg/tokens/driver");
  EXPECT_EQ(config->client_certificate_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
}

TEST(KubeconfigTest, ClientCertificateAndKeyData) {
  const FakeFiles files;
  Result<ApiConfig> config =
      parseKubeconfig(kubeconfig(kServer + kCaData, "    client-certificate-data: Q0VSVA==\n"
                                                    "    client-key-data: S0VZ\n"),
                      "/cfg", files.reader());
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->client_certificate_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_EQ(config->token, "");
}

struct BadKubeconfig {
  std::string description;
  std::string yaml;
  std::string error;
};

void PrintTo(const BadKubeconfig& bad, std::ostream* out) {
  *out << bad.description;
}

class BadKubeconfigTest : public ::testing::TestWithParam<BadKubeconfig> {};

TEST_P(BadKubeconfigTest, IsRefusedWithAClearError) {
  FakeFiles files;
  Result<ApiConfig> config = parseKubeconfig(GetParam().yaml, "/cfg", files.reader());
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message, HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Kubeconfigs, BadKubeconfigTest,
    ::testing::Values(
        BadKubeconfig{
            "InsecureSkipTlsVerify",
            kubeconfig(kServer + "    insecure-skip-tls-verify: true\n", "    token: t\n"),
            "cluster 'lab': insecure-skip-tls-verify is true; kube-rdma always verifies"},
        BadKubeconfig{"ExecPlugin", kubeconfig(kServer + kCaData, "    exec: {command: aws}\n"),
                      "user 'rdma': 'exec' credentials are not supported"},
        BadKubeconfig{"BasicAuth", kubeconfig(kServer + kCaData, "    username: admin\n"),
                      "'username' credentials are not supported"},
        BadKubeconfig{"NoServer", kubeconfig(kCaData, "    token: t\n"),
                      "cluster 'lab': no 'server'"},
        BadKubeconfig{"ServerNotAString", kubeconfig("    server: [a, b]\n", ""),
                      "not a valid kubeconfig"},
        BadKubeconfig{"BadBase64",
                      kubeconfig(kServer + "    certificate-authority-data: 'not*base64'\n", ""),
                      "certificate-authority-data: not base64 (RFC 4648, padded with '=')"},
        BadKubeconfig{"MissingCaFile",
                      kubeconfig(kServer + "    certificate-authority: ca.crt\n", ""),
                      "certificate-authority: cannot read /cfg/ca.crt"},
        BadKubeconfig{"CertificateWithoutKey",
                      kubeconfig(kServer + kCaData, "    client-certificate-data: Q0VSVA==\n"),
                      "user 'rdma': client-certificate without client-key"},
        BadKubeconfig{"NoCurrentContext", "clusters: []\n", "current-context is not set"},
        BadKubeconfig{"UnknownContext", "current-context: gone\ncontexts: []\n",
                      "no context named 'gone' in 'contexts'"},
        BadKubeconfig{"ContextsNotAList", "current-context: x\ncontexts: {a: b}\n",
                      "'contexts' is not a list"},
        BadKubeconfig{"UnknownCluster",
                      "current-context: c\ncontexts:\n- {name: c, context: {cluster: lab}}\n",
                      "context 'c': no cluster named 'lab' in 'clusters'"},
        BadKubeconfig{"NotYaml", "current-context: [unclosed\n", "not a valid kubeconfig"},
        BadKubeconfig{"NotAMap", "- just\n- a list\n", "the document is not a map"}),
    [](const auto& info) { return info.param.description; });

TEST(Base64Test, DecodesPaddedTextAndRefusesMalformedText) {
  EXPECT_EQ(*decodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(*decodeBase64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(*decodeBase64(""), "");
  EXPECT_FALSE(decodeBase64("aGVsbG8"));   // 7 symbols, no padding
  EXPECT_FALSE(decodeBase64("aGVsbG8==")); // too much padding
  EXPECT_FALSE(decodeBase64("aG=sbG8="));  // padding inside
  EXPECT_FALSE(decodeBase64("a"));
}

TEST(KubeconfigTest, LoadKubeconfigReadsTheFileAndItsRelativeFiles) {
  TempDir dir;
  std::ofstream(dir.path() + "/ca.crt") << kCaPem;
  std::ofstream(dir.path() + "/config")
      << kubeconfig(kServer + "    certificate-authority: ca.crt\n", "    token: t\n");
  Result<ApiConfig> config = loadKubeconfig(dir.path() + "/config");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->ca_pem, kCaPem);

  Result<ApiConfig> missing = loadKubeconfig(dir.path() + "/absent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "kubeconfig: cannot read " + dir.path() + "/absent");
}

class InClusterConfigTest : public ::testing::Test {
protected:
  void SetUp() override {
    account_ = dir_.sub("var/run/secrets/kubernetes.io/serviceaccount");
    std::ofstream(account_ + "/ca.crt") << kCaPem;
    std::ofstream(account_ + "/token") << "sa-token";
  }
  TempDir dir_;
  std::string account_;
};

TEST_F(InClusterConfigTest, ReadsTheServiceAccountUnderTheRoot) {
  Result<ApiConfig> config = inClusterConfig(dir_.path(), {"10.96.0.1", "443"});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token_file, account_ + "/token");
  EXPECT_EQ(config->token, "");
}

TEST_F(InClusterConfigTest, BracketsAnIpv6ServiceAddress) {
  Result<ApiConfig> config = inClusterConfig(dir_.path(), {"fd00::1", "443"});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
}

TEST_F(InClusterConfigTest, OutsideAPodOrWithoutATokenIsAnError) {
  Result<ApiConfig> no_env = inClusterConfig(dir_.path(), {"", ""});
  ASSERT_FALSE(no_env);
  EXPECT_THAT(no_env.error().message, HasSubstr("KUBERNETES_SERVICE_HOST"));
  std::filesystem::remove(account_ + "/token");
  Result<ApiConfig> no_token = inClusterConfig(dir_.path(), {"10.96.0.1", "443"});
  ASSERT_FALSE(no_token);
  EXPECT_EQ(no_token.error().message, "service account: cannot read " + account_ + "/token");
}

} // namespace
} // namespace kube_rdma
