#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/util/clock.h"
#include "common/util/result.h"
#include "kubeclient/api_error.h"
#include "kubeclient/api_paths.h"
#include "kubeclient/bearer_token.h"
#include "kubeclient/kubeconfig.h"
#include "kubeclient/watch_stream.h"

namespace httplib {
class SSLClient;
}

// A small client of the Kubernetes REST API over HTTPS with keep-alive (cpp-httplib, OpenSSL).
// The caller passes paths (api_paths.h); objects travel as JSON. docs/kubeclient.md.
namespace kube_rdma {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // For one request's answer; watches wait for their own timeoutSeconds instead.
  std::chrono::milliseconds request_timeout{10000};
  // Connections kept open for reuse: a request finding one skips the TCP and TLS handshakes.
  size_t max_idle_connections = 4;
  std::string user_agent = "kube-rdma";
  // Told of every GET, LIST, POST, PUT, DELETE and WATCH that fails, as it returns (a daemon's
  // metrics count them); empty: nobody is.
  std::function<void(const ApiError& error)> on_error;
};

struct ListOptions {
  std::string field_selector; // "spec.nodeName=node-1,spec.driver=rdma.kube-rdma.io"
};

struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resource_version; // where a watch that follows this list starts
};

struct WatchOptions {
  std::string resource_version; // from a LIST or the last event; "" = start with current state
  std::string field_selector;
  int timeout_seconds = 300; // the server ends the stream after this; watch again from the last
};

// Ends a watch() running on another thread, at once: the connection is shut down.
class WatchStop {
public:
  void stop();

private:
  friend class ApiClient;
  mutable std::mutex mutex_;
  bool stopped_ = false;
  httplib::SSLClient* active_ = nullptr;
};

class ApiClient {
public:
  // Checks the configuration (server URL, PEM certificates and key, token file readable) and
  // opens no connection yet.
  static Result<std::unique_ptr<ApiClient>> fromConfig(const ApiConfig& config,
                                                       ClientOptions options, ClockPtr clock);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  ApiResult<nlohmann::json> get(const std::string& path);
  ApiResult<ObjectList> list(const std::string& collection_path, const ListOptions& options = {});
  // POST; the object's metadata.name or metadata.generateName names it.
  ApiResult<nlohmann::json> create(const std::string& collection_path,
                                   const nlohmann::json& object);
  // PUT; with metadata.resourceVersion set, the server refuses (409 Conflict) when the object
  // changed since that version.
  ApiResult<nlohmann::json> update(const std::string& path, const nlohmann::json& object);
  // DELETE; answers the object as it was deleted.
  ApiResult<nlohmann::json> remove(const std::string& path);

  // Streams changes of a collection to `on_event` (ADDED, MODIFIED, DELETED; bookmarks only move
  // the version) until the server ends the stream or `stop` is called; then answers the last
  // resourceVersion seen, to watch again from. An error with code 410 means that version is too
  // old: LIST again and watch from the list's version.
  using WatchHandler = std::function<void(const WatchEvent& event)>;
  ApiResult<std::string> watch(const std::string& collection_path, const WatchOptions& options,
                               const WatchHandler& on_event, WatchStop& stop);

private:
  struct TlsMaterial;
  struct Answer {
    int status = 0;
    std::string body;
    std::chrono::seconds retry_after{0};
  };
  ApiClient(ServerAddress address, std::unique_ptr<TlsMaterial> tls, ClientOptions options,
            std::unique_ptr<BearerToken> token);

  ApiResult<nlohmann::json> call(const char* method, const std::string& path,
                                 const nlohmann::json* body);
  ApiResult<Answer> exchange(const char* method, const std::string& path, const std::string& body);
  std::unique_ptr<httplib::SSLClient> connect(std::chrono::milliseconds read_timeout) const;
  std::unique_ptr<httplib::SSLClient> takeConnection();
  void keepConnection(std::unique_ptr<httplib::SSLClient> connection);
  ApiError transportError(const char* method, const std::string& path,
                          const httplib::SSLClient& connection, int error) const;

  const ServerAddress address_;
  const std::unique_ptr<TlsMaterial> tls_;
  const ClientOptions options_;
  const std::unique_ptr<BearerToken> token_;
  std::mutex idle_mutex_;
  std::vector<std::unique_ptr<httplib::SSLClient>> idle_;
};
using ApiClientPtr = std::unique_ptr<ApiClient>;

} // namespace kube_rdma
