#include "kubeclient/api_paths.h"

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

bool isUnreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

} // namespace

std::string percentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (isUnreserved(c)) {
      out += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  return out;
}

Result<std::string> collectionPath(const ApiResource& resource, std::string_view ns) {
  if (!resource.namespaced && !ns.empty()) {
    return makeError(std::string(resource.plural) + " are cluster-scoped: no namespace ('" +
                     std::string(ns) + "' given)");
  }
  std::string path = resource.group.empty() ? "/api/" + std::string(resource.version)
                                            : "/apis/" + std::string(resource.group) + "/" +
                                                  std::string(resource.version);
  if (!ns.empty()) {
    path += "/namespaces/" + percentEncode(ns);
  }
  return path + "/" + std::string(resource.plural);
}

Result<std::string> objectPath(const ApiResource& resource, std::string_view ns,
                               std::string_view name) {
  if (name.empty()) {
    return makeError("an object of " + std::string(resource.plural) + " needs a name");
  }
  if (resource.namespaced && ns.empty()) {
    return makeError(std::string(resource.plural) + " are namespaced: '" + std::string(name) +
                     "' needs a namespace");
  }
  Result<std::string> collection = collectionPath(resource, ns);
  if (!collection) {
    return collection.error();
  }
  return *collection + "/" + percentEncode(name);
}

std::string withQuery(std::string path,
                      const std::vector<std::pair<std::string, std::string>>& parameters) {
  char separator = '?';
  for (const auto& [key, value] : parameters) {
    if (value.empty()) {
      continue;
    }
    path += separator;
    path += percentEncode(key) + "=" + percentEncode(value);
    separator = '&';
  }
  return path;
}

Result<ServerAddress> parseServerUrl(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return makeError("server '" + std::string(url) +
                     "' is not an https:// URL (the API is only spoken over TLS)");
  }
  std::string_view rest = url.substr(kScheme.size());
  ServerAddress address;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    address.path_prefix = std::string(rest.substr(slash));
    while (!address.path_prefix.empty() && address.path_prefix.back() == '/') {
      address.path_prefix.pop_back();
    }
    rest = rest.substr(0, slash);
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return makeError("server '" + std::string(url) + "': IPv6 address without ']'");
    }
    address.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      return makeError("server '" + std::string(url) + "': unexpected text after ']'");
    }
    port_text = rest.empty() ? "" : rest.substr(1);
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    address.host = std::string(rest.substr(0, colon));
    port_text = rest.substr(colon + 1);
  } else {
    address.host = std::string(rest);
  }
  if (address.host.empty()) {
    return makeError("server '" + std::string(url) + "' has no host");
  }
  if (!port_text.empty()) {
    const std::optional<int> port = parseWhole<int>(port_text);
    if (!port || *port < 1 || *port > 65535) {
      return makeError("server '" + std::string(url) + "': port '" + std::string(port_text) +
                       "' is not a number from 1 to 65535");
    }
    address.port = *port;
  }
  return address;
}

} // namespace kube_rdma
