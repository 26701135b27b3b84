#include "webhook/flags.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

const std::vector<std::string> kCerts = {"--tls-cert-file", "/c", "--tls-private-key-file=/k"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> args = kCerts;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(WebhookFlags, DefaultsMatchTheDesign) {
  Result<WebhookFlags> flags = parseWebhookFlags(kCerts);
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->tls_cert_file, "/c");
  EXPECT_EQ(flags->tls_private_key_file, "/k");
  EXPECT_EQ(flags->listen.host, "0.0.0.0");
  EXPECT_EQ(flags->listen.port, 8443);
  EXPECT_EQ(flags->policy_file, "");
  EXPECT_EQ(flags->metrics_address, "");
  EXPECT_EQ(flags->kubeconfig, "");
  EXPECT_EQ(flags->log_format, LogFormat::kText);
  EXPECT_EQ(flags->max_connections, 1024u);
  EXPECT_EQ(flags->request_timeout, std::chrono::seconds(5));
  EXPECT_EQ(flags->shutdown_delay, std::chrono::seconds(5));
  EXPECT_EQ(flags->exit_message, "");
}

TEST(WebhookFlags, ReadsEveryFlagInBothForms) {
  Result<WebhookFlags> flags = parseWebhookFlags(
      with({"--listen-address=[::1]:9443", "--policy", "/p.json", "--metrics-address", ":9090",
            "--log-format=json", "--shutdown-delay=0", "--max-connections=300", "--request-timeout",
            "2", "--kubeconfig", "/etc/kube/config"}));
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->listen.host, "::1");
  EXPECT_EQ(flags->listen.port, 9443);
  EXPECT_EQ(flags->policy_file, "/p.json");
  EXPECT_EQ(flags->metrics_address, ":9090");
  EXPECT_EQ(flags->log_format, LogFormat::kJson);
  EXPECT_EQ(flags->shutdown_delay.count(), 0);
  EXPECT_EQ(flags->max_connections, 300u);
  EXPECT_EQ(flags->request_timeout.count(), 2);
  EXPECT_EQ(flags->kubeconfig, "/etc/kube/config");
}

TEST(WebhookFlags, DurationsTakeUnits) {
  Result<WebhookFlags> flags =
      parseWebhookFlags(with({"--request-timeout=1m", "--shutdown-delay", "2m30s"}));
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->request_timeout, std::chrono::seconds(60));
  EXPECT_EQ(flags->shutdown_delay, std::chrono::seconds(150));
}

TEST(WebhookFlags, HelpAndVersionNeedNoCertificates) {
  Result<WebhookFlags> help = parseWebhookFlags({"--help"});
  ASSERT_TRUE(help.ok()) << help.error().message;
  EXPECT_NE(help->exit_message.find("Usage: rdma-webhook"), std::string::npos);
  EXPECT_NE(help->exit_message.find("--tls-cert-file FILE REQUIRED"), std::string::npos)
      << help->exit_message;
  Result<WebhookFlags> version = parseWebhookFlags({"--version"});
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_EQ(version->exit_message.rfind("rdma-webhook ", 0), 0u) << version->exit_message;
}

TEST(WebhookFlags, ErrorsNameTheFlagAndTheValue) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--tls-cert-file is required"},
      {{"--tls-cert-file=/c"}, "--tls-private-key-file is required"},
      {with({"--listen-address", "8443"}), "--listen-address: "},
      {with({"--listen-address", ":99999"}), "--listen-address: "},
      {with({"--listen-address", "::1:8443"}), "--listen-address: "},
      {with({"--metrics-address", "x"}), "--metrics-address: "},
      {with({"--log-format", "yaml"}), "--log-format: must be text or json, not 'yaml'"},
      {with({"--max-connections", "many"}),
       "--max-connections: Value many not in range 2 to 65536"},
      {with({"--max-connections", "0"}), "--max-connections: Value 0 not in range 2 to 65536"},
      {with({"--request-timeout", "0"}), "--request-timeout: '0' is outside 1s..5m"},
      {with({"--request-timeout", "1500ms"}),
       "--request-timeout: '1500ms' is not a whole number of seconds"},
      {with({"--shutdown-delay", "soon"}),
       "--shutdown-delay: 'soon' is not a duration (examples: 500ms, 5s, 1m30s)"},
      {with({"--verbose", "1"}), "unexpected arguments: --verbose 1"},
      {with({"--policy"}), "--policy: 1 required FILE missing"},
  };
  for (const auto& [args, message] : cases) {
    Result<WebhookFlags> flags = parseWebhookFlags(args);
    ASSERT_FALSE(flags.ok()) << message;
    EXPECT_EQ(flags.error().message.rfind(message, 0), 0u) << flags.error().message;
  }
  // parseListenAddress's own words follow the flag's name.
  Result<WebhookFlags> brackets = parseWebhookFlags(with({"--listen-address", "::1:8443"}));
  ASSERT_FALSE(brackets.ok());
  EXPECT_NE(brackets.error().message.find("brackets"), std::string::npos)
      << brackets.error().message;
}

} // namespace
} // namespace kube_rdma
