#include "webhook/flags.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace kube_rdma {
namespace {

Result<long> parseNumber(const std::string& flag, const std::string& text, long min, long max) {
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return makeError(flag + ": expected a whole number in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got \"" + text + "\"");
  }
  return value;
}

} // namespace

Result<WebhookFlags> parseWebhookFlags(const std::vector<std::string>& args) {
  std::map<std::string, std::string> values;
  static const std::vector<std::string> kKnown = {
      "--tls-cert-file",   "--tls-private-key-file", "--listen-address", "--policy",
      "--metrics-address", "--log-format",           "--threads",        "--shutdown-delay",
      "--max-connections", "--request-timeout"};
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return makeError(name + ": missing value");
    }
    if (std::find(kKnown.begin(), kKnown.end(), name) == kKnown.end()) {
      return makeError("unknown flag " + name);
    }
    values[name] = value;
  }

  WebhookFlags flags;
  flags.tls_cert_file = values["--tls-cert-file"];
  flags.tls_private_key_file = values["--tls-private-key-file"];
  if (flags.tls_cert_file.empty() || flags.tls_private_key_file.empty()) {
    return makeError("--tls-cert-file and --tls-private-key-file are required");
  }
  if (values.count("--listen-address") != 0) {
    Result<ListenAddress> listen = parseListenAddress(values["--listen-address"]);
    if (!listen.ok()) {
      return makeError("--listen-address: " + listen.error().message);
    }
    flags.listen = *listen;
  }
  flags.policy_file = values["--policy"];
  flags.metrics_address = values["--metrics-address"];
  if (!flags.metrics_address.empty()) {
    Result<ListenAddress> metrics = parseListenAddress(flags.metrics_address);
    if (!metrics.ok()) {
      return makeError("--metrics-address: " + metrics.error().message);
    }
  }
  if (values.count("--log-format") != 0 &&
      !parseLogFormat(values["--log-format"], flags.log_format)) {
    return makeError("--log-format: expected text or json, got \"" + values["--log-format"] + "\"");
  }
  if (values.count("--threads") != 0) {
    Result<long> threads = parseNumber("--threads", values["--threads"], 2, 1024);
    if (!threads.ok()) {
      return threads.error();
    }
    flags.threads = static_cast<size_t>(*threads);
  }
  if (values.count("--max-connections") != 0) {
    Result<long> cap = parseNumber("--max-connections", values["--max-connections"], 2, 65536);
    if (!cap.ok()) {
      return cap.error();
    }
    flags.max_connections = static_cast<size_t>(*cap);
  }
  if (flags.max_connections < flags.threads) {
    return makeError("--max-connections (" + std::to_string(flags.max_connections) +
                     ") is below --threads (" + std::to_string(flags.threads) + ")");
  }
  if (values.count("--request-timeout") != 0) {
    Result<long> timeout = parseNumber("--request-timeout", values["--request-timeout"], 1, 300);
    if (!timeout.ok()) {
      return timeout.error();
    }
    flags.request_timeout = std::chrono::seconds(*timeout);
  }
  if (values.count("--shutdown-delay") != 0) {
    Result<long> delay = parseNumber("--shutdown-delay", values["--shutdown-delay"], 0, 300);
    if (!delay.ok()) {
      return delay.error();
    }
    flags.shutdown_delay = std::chrono::seconds(*delay);
  }
  return flags;
}

std::string webhookUsage() {
  return "usage: rdma-webhook --tls-cert-file FILE --tls-private-key-file FILE\n"
         "         [--listen-address HOST:PORT (:8443)] [--policy FILE]\n"
         "         [--metrics-address HOST:PORT] [--log-format text|json]\n"
         "         [--threads N (64)] [--max-connections N (1024)]\n"
         "         [--request-timeout SECONDS (5)] [--shutdown-delay SECONDS (5)]\n";
}

} // namespace kube_rdma
