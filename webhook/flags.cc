#include "webhook/flags.h"

#include "common/util/command_line.h"

namespace kube_rdma {

Result<WebhookFlags> parseWebhookFlags(const std::vector<std::string>& args) {
  WebhookFlags flags;
  auto app = makeApp("rdma-webhook", "rdma-webhook: the mutating admission webhook of kube-rdma.");
  app->add_option("--tls-cert-file", flags.tls_cert_file, "serving certificate chain (PEM)")
      ->type_name("FILE")
      ->required();
  app->add_option("--tls-private-key-file", flags.tls_private_key_file, "its private key (PEM)")
      ->type_name("FILE")
      ->required();
  addCheckedOption(
      *app, "--listen-address",
      [&flags](const std::string& text) -> std::string {
        Result<ListenAddress> address = parseListenAddress(text);
        if (!address) {
          return address.error().message;
        }
        flags.listen = *address;
        return "";
      },
      "HTTPS address of /mutate, /healthz, /readyz and /metrics (default :8443)")
      ->type_name("HOST:PORT");
  app->add_option("--policy", flags.policy_file, "policy (JSON); default: the built-in policy")
      ->type_name("FILE");
  addMetricsAddressOption(*app, flags.metrics_address,
                          "also serve /metrics over plain HTTP here (default: off)");
  app->add_option("--kubeconfig", flags.kubeconfig,
                  "kubeconfig for reading pods' resource claims (default: in a cluster, the "
                  "pod's service account)")
      ->type_name("FILE");
  addLogFormatOption(*app, flags.log_format);
  app->add_option("--max-connections", flags.max_connections,
                  "connections open at once; the rest wait in the listen backlog")
      ->type_name("N")
      ->check(CLI::Range(2, 65536));
  addDurationOption(*app, "--request-timeout", std::chrono::seconds(1), std::chrono::seconds(300),
                    wholeSeconds(flags.request_timeout),
                    "time for a request after the keep-alive wait (default 5s)");
  addDurationOption(
      *app, "--shutdown-delay", std::chrono::seconds(0), std::chrono::seconds(300),
      wholeSeconds(flags.shutdown_delay),
      "after SIGTERM, how long /readyz fails before the listener closes (default 5s)");

  return parseFlags(*app, args, flags);
}

} // namespace kube_rdma
