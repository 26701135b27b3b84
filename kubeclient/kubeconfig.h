#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "common/util/result.h"

// Where the API server is and how to prove who we are: from a kubeconfig file or from the pod's
// service account. docs/kubeclient.md "Configuration".
namespace kube_rdma {

struct ApiConfig {
  std::string server; // https://host[:port]
  // PEM of the CAs the server's certificate must chain to; empty: the system's trust store.
  std::string ca_pem;
  // Bearer token: a fixed one, or a file read at start and again as it rotates. The file wins
  // when both are set (kubeconfig's rule).
  std::string token;
  std::string token_file;
  // A client certificate and its key (PEM), both or neither.
  std::string client_certificate_pem;
  std::string client_key_pem;
};

// Reads a file's whole content; injected so parsing needs no disk.
using ReadFile = std::function<Result<std::string>(const std::filesystem::path& path)>;
Result<std::string> readWholeFile(const std::filesystem::path& path);

// The current context of a kubeconfig's YAML. Relative file names (certificate-authority,
// client-certificate, client-key, tokenFile) are taken from `base_dir`, the kubeconfig's
// directory. Refuses `insecure-skip-tls-verify: true`, exec and auth-provider plugins and basic
// auth, naming what it found.
Result<ApiConfig> parseKubeconfig(std::string_view yaml, const std::filesystem::path& base_dir,
                                  const ReadFile& read_file);
// parseKubeconfig on the file at `path`, errors prefixed with it.
Result<ApiConfig> loadKubeconfig(const std::filesystem::path& path);

// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which the kubelet sets in every container.
struct ServiceEnvironment {
  std::string host;
  std::string port;
};
ServiceEnvironment serviceEnvironmentFromProcess();

// The pod's own service account: the server from `env`, the CA and token from
// `root`/var/run/secrets/kubernetes.io/serviceaccount (root is "/" in a pod). The token is
// referenced as a file: the kubelet rotates it.
Result<ApiConfig> inClusterConfig(const std::filesystem::path& root, const ServiceEnvironment& env);

// Standard base64 (RFC 4648, padded), as kubeconfig's *-data fields hold.
Result<std::string> decodeBase64(std::string_view text);

} // namespace kube_rdma
