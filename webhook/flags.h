#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/util/listen_address.h"
#include "common/util/log.h"
#include "common/util/result.h"

// rdma-webhook's command line (DESIGN.md "Interfaces"). Parsing is a pure function so every flag
// and every error is testable without starting the server.
namespace kube_rdma {

struct WebhookFlags {
  std::string tls_cert_file;
  std::string tls_private_key_file;
  ListenAddress listen{"0.0.0.0", 8443};
  std::string policy_file;     // empty: the default policy
  std::string metrics_address; // empty: /metrics only on the HTTPS port
  // Where the API server is, for reading pods' resource claims; empty: the pod's service account
  // when running in a cluster, else no API access.
  std::string kubeconfig;
  LogFormat log_format = LogFormat::kText;
  // Connections open at once; beyond it new ones wait in the listen backlog.
  size_t max_connections = 1024;
  // A connection is cut after the keep-alive wait (5 s) plus this without an answered request.
  std::chrono::seconds request_timeout{5};
  // After SIGTERM: how long /readyz fails while requests are still answered, so the endpoint is
  // removed before the listener closes.
  std::chrono::seconds shutdown_delay{5};
  // --help or --version: print this and exit 0 instead of running.
  std::string exit_message;
};

// Parses argv without argv[0] (common/util/command_line.h: "--name value" or "--name=value").
Result<WebhookFlags> parseWebhookFlags(const std::vector<std::string>& args);

} // namespace kube_rdma
