#include "kubeclient/kubeconfig.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>

namespace kube_rdma {
namespace {

constexpr const char* kServiceAccountDir = "var/run/secrets/kubernetes.io/serviceaccount";

// The entry named `name` in a kubeconfig list (`clusters`, `users`, `contexts`), whose items are
// {name, <singular>: {...}}.
Result<YAML::Node> namedEntry(const YAML::Node& root, const std::string& list,
                              const std::string& singular, const std::string& name) {
  const YAML::Node items = root[list];
  if (items && !items.IsSequence()) {
    return makeError("'" + list + "' is not a list");
  }
  for (const YAML::Node& item : items) {
    if (item.IsMap() && item["name"] && item["name"].as<std::string>() == name) {
      const YAML::Node body = item[singular];
      if (!body || !body.IsMap()) {
        return makeError(singular + " '" + name + "' has no '" + singular + "' map");
      }
      return body;
    }
  }
  return makeError("no " + singular + " named '" + name + "' in '" + list + "'");
}

std::string stringField(const YAML::Node& map, const char* key) {
  const YAML::Node value = map[key];
  return value ? value.as<std::string>() : "";
}

// PEM from `<key>-data` (base64) or from the file `<key>`; "" when neither is set.
Result<std::string> pemField(const YAML::Node& map, const std::string& key,
                             const std::filesystem::path& base_dir, const ReadFile& read_file) {
  const std::string data = stringField(map, (key + "-data").c_str());
  if (!data.empty()) {
    Result<std::string> decoded = decodeBase64(data);
    if (!decoded) {
      return makeError(key + "-data: " + decoded.error().message);
    }
    return decoded;
  }
  const std::string file = stringField(map, key.c_str());
  if (file.empty()) {
    return std::string();
  }
  Result<std::string> content = read_file(base_dir / file);
  if (!content) {
    return makeError(key + ": " + content.error().message);
  }
  return content;
}

Status readCluster(const YAML::Node& cluster, const std::string& name,
                   const std::filesystem::path& base_dir, const ReadFile& read_file,
                   ApiConfig& config) {
  const std::string where = "cluster '" + name + "': ";
  config.server = stringField(cluster, "server");
  if (config.server.empty()) {
    return makeError(where + "no 'server'");
  }
  if (const YAML::Node skip = cluster["insecure-skip-tls-verify"]; skip && skip.as<bool>()) {
    return makeError(where + "insecure-skip-tls-verify is true; kube-rdma always verifies the API "
                             "server's certificate: give certificate-authority(-data) instead");
  }
  Result<std::string> ca = pemField(cluster, "certificate-authority", base_dir, read_file);
  if (!ca) {
    return makeError(where + ca.error().message);
  }
  config.ca_pem = std::move(*ca);
  return Ok{};
}

Status readUser(const YAML::Node& user, const std::string& name,
                const std::filesystem::path& base_dir, const ReadFile& read_file,
                ApiConfig& config) {
  const std::string where = "user '" + name + "': ";
  for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
    if (user[unsupported]) {
      return makeError(where + "'" + unsupported +
                       "' credentials are not supported; use token, tokenFile or "
                       "client-certificate and client-key");
    }
  }
  config.token = stringField(user, "token");
  const std::string token_file = stringField(user, "tokenFile");
  if (!token_file.empty()) {
    config.token_file = (base_dir / token_file).string();
  }
  Result<std::string> certificate = pemField(user, "client-certificate", base_dir, read_file);
  if (!certificate) {
    return makeError(where + certificate.error().message);
  }
  Result<std::string> key = pemField(user, "client-key", base_dir, read_file);
  if (!key) {
    return makeError(where + key.error().message);
  }
  if (certificate->empty() != key->empty()) {
    return makeError(where + (certificate->empty() ? "client-key without client-certificate"
                                                   : "client-certificate without client-key"));
  }
  config.client_certificate_pem = std::move(*certificate);
  config.client_key_pem = std::move(*key);
  return Ok{};
}

Result<ApiConfig> parseKubeconfigNodes(const YAML::Node& root,
                                       const std::filesystem::path& base_dir,
                                       const ReadFile& read_file) {
  if (!root.IsMap()) {
    return makeError("not a kubeconfig: the document is not a map");
  }
  const std::string context_name = stringField(root, "current-context");
  if (context_name.empty()) {
    return makeError("current-context is not set");
  }
  Result<YAML::Node> context = namedEntry(root, "contexts", "context", context_name);
  if (!context) {
    return context.error();
  }
  const std::string cluster_name = stringField(*context, "cluster");
  const std::string user_name = stringField(*context, "user");
  ApiConfig config;

  Result<YAML::Node> cluster = namedEntry(root, "clusters", "cluster", cluster_name);
  if (!cluster) {
    return makeError("context '" + context_name + "': " + cluster.error().message);
  }
  if (Status read = readCluster(*cluster, cluster_name, base_dir, read_file, config); !read) {
    return read.error();
  }
  if (!user_name.empty()) {
    Result<YAML::Node> user = namedEntry(root, "users", "user", user_name);
    if (!user) {
      return makeError("context '" + context_name + "': " + user.error().message);
    }
    if (Status read = readUser(*user, user_name, base_dir, read_file, config); !read) {
      return read.error();
    }
  }
  return config;
}

} // namespace

Result<std::string> readWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return makeError("cannot read " + path.string());
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Result<ApiConfig> parseKubeconfig(std::string_view yaml, const std::filesystem::path& base_dir,
                                  const ReadFile& read_file) {
  try {
    return parseKubeconfigNodes(YAML::Load(std::string(yaml)), base_dir, read_file);
  } catch (const YAML::Exception& e) {
    // Parse errors and fields of the wrong type (a list where a string belongs) alike.
    return makeError("not a valid kubeconfig: " + std::string(e.what()));
  }
}

Result<ApiConfig> loadKubeconfig(const std::filesystem::path& path) {
  Result<std::string> yaml = readWholeFile(path);
  if (!yaml) {
    return makeError("kubeconfig: " + yaml.error().message);
  }
  Result<ApiConfig> config = parseKubeconfig(*yaml, path.parent_path(), readWholeFile);
  if (!config) {
    return makeError("kubeconfig " + path.string() + ": " + config.error().message);
  }
  return config;
}

ServiceEnvironment serviceEnvironmentFromProcess() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  return ServiceEnvironment{host ? host : "", port ? port : ""};
}

Result<ApiConfig> inClusterConfig(const std::filesystem::path& root,
                                  const ServiceEnvironment& env) {
  if (env.host.empty() || env.port.empty()) {
    return makeError("not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are "
                     "not both set (give --kubeconfig outside a cluster)");
  }
  const std::filesystem::path dir = root / kServiceAccountDir;
  ApiConfig config;
  const bool ipv6 = env.host.find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + env.host + "]" : env.host) + ":" + env.port;
  Result<std::string> ca = readWholeFile(dir / "ca.crt");
  if (!ca) {
    return makeError("service account: " + ca.error().message);
  }
  config.ca_pem = std::move(*ca);
  config.token_file = (dir / "token").string();
  if (Result<std::string> token = readWholeFile(config.token_file); !token) {
    return makeError("service account: " + token.error().message);
  }
  return config;
}

Result<std::string> decodeBase64(std::string_view text) {
  // OpenSSL's PEM body decoder: skips line breaks and spaces, checks the alphabet and the padding.
  std::unique_ptr<EVP_ENCODE_CTX, decltype(&EVP_ENCODE_CTX_free)> context(EVP_ENCODE_CTX_new(),
                                                                          EVP_ENCODE_CTX_free);
  std::string out(text.size() / 4 * 3 + 3, '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(out.data());
  int written = 0;
  int last = 0;
  EVP_DecodeInit(context.get());
  if (text.size() > INT_MAX ||
      EVP_DecodeUpdate(context.get(), bytes, &written,
                       reinterpret_cast<const unsigned char*>(text.data()),
                       static_cast<int>(text.size())) < 0 ||
      EVP_DecodeFinal(context.get(), bytes + written, &last) < 0) {
    return makeError("not base64 (RFC 4648, padded with '=')");
  }
  out.resize(static_cast<size_t>(written) + static_cast<size_t>(last));
  return out;
}

} // namespace kube_rdma
