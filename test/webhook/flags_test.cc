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
  EXPECT_EQ(flags->log_format, LogFormat::kText);
}

TEST(WebhookFlags, ReadsEveryFlagInBothForms) {
  Result<WebhookFlags> flags = parseWebhookFlags(
      with({"--listen-address=[::1]:9443", "--policy", "/p.json", "--metrics-address", ":9090",
            "--log-format=json", "--threads", "16", "--shutdown-delay=0", "--max-connections=300",
            "--request-timeout", "2"}));
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->listen.host, "::1");
  EXPECT_EQ(flags->listen.port, 9443);
  EXPECT_EQ(flags->policy_file, "/p.json");
  EXPECT_EQ(flags->metrics_address, ":9090");
  EXPECT_EQ(flags->log_format, LogFormat::kJson);
  EXPECT_EQ(flags->threads, 16u);
  EXPECT_EQ(flags->shutdown_delay.count(), 0);
  EXPECT_EQ(flags->max_connections, 300u);
  EXPECT_EQ(flags->request_timeout.count(), 2);
}

TEST(WebhookFlags, ErrorsNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--tls-cert-file"},
      {with({"--listen-address", "8443"}), "--listen-address"},
      {with({"--listen-address", ":99999"}), "--listen-address"},
      {with({"--listen-address", "::1:8443"}), "brackets"},
      {with({"--metrics-address", "x"}), "--metrics-address"},
      {with({"--log-format", "yaml"}), "--log-format"},
      {with({"--threads", "1"}), "--threads"},
      {with({"--threads", "many"}), "--threads"},
      {with({"--max-connections", "0"}), "--max-connections"},
      {with({"--threads", "128", "--max-connections", "100"}), "is below --threads (128)"},
      {with({"--request-timeout", "0"}), "--request-timeout"},
      {with({"--request-timeout", "5s"}), "--request-timeout"},
      {with({"--verbose", "1"}), "unknown flag --verbose"},
      {with({"--policy"}), "--policy: missing value"},
  };
  for (const auto& [args, message] : cases) {
    Result<WebhookFlags> flags = parseWebhookFlags(args);
    ASSERT_FALSE(flags.ok()) << message;
    EXPECT_NE(flags.error().message.find(message), std::string::npos) << flags.error().message;
  }
}

} // namespace
} // namespace kube_rdma
