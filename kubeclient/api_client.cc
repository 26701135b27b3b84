#include "kubeclient/api_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <utility>

namespace kube_rdma {
namespace {

using json = nlohmann::json;

// A default-constructible deleter (the TLS members start empty and are reset() later).
template <auto Free> struct OpenSslFree {
  template <class T> void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY_free>>;
using StorePtr = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree<BIO_free>>;

BioPtr memoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::vector<X509Ptr> readCertificates(const std::string& pem) {
  std::vector<X509Ptr> certificates;
  const BioPtr bio = memoryBio(pem);
  while (X509* certificate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certificates.emplace_back(certificate);
  }
  ERR_clear_error(); // the read that ended the loop left "no start line" behind
  return certificates;
}

// Verifies the server's chain against exactly the configured CAs. cpp-httplib adds the system's
// trust store to the connection's own, which would let any public CA vouch for the API server.
int verifyAgainstConfiguredCas(X509_STORE_CTX* context, void* configured_store) {
  X509_STORE_CTX* own = X509_STORE_CTX_new();
  if (own == nullptr) {
    return 0;
  }
  int verified = 0;
  if (X509_STORE_CTX_init(own, static_cast<X509_STORE*>(configured_store),
                          X509_STORE_CTX_get0_cert(context),
                          X509_STORE_CTX_get0_untrusted(context)) == 1) {
    verified = X509_verify_cert(own);
    X509_STORE_CTX_set_error(context, verified == 1 ? X509_V_OK : X509_STORE_CTX_get_error(own));
  }
  X509_STORE_CTX_free(own);
  return verified == 1 ? 1 : 0;
}

// An error answer is a Status of a few hundred bytes; more is not read.
constexpr size_t kMaxErrorBodyBytes = size_t{64} * 1024;

// `token` empty: none configured, no Authorization header. Callers pass token_->current()'s
// value: it fails only before its first success, which fromConfig required.
httplib::Headers requestHeaders(const std::string& user_agent, const std::string& token) {
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", user_agent}};
  if (!token.empty()) {
    headers.emplace("Authorization", "Bearer " + token);
  }
  return headers;
}

} // namespace

struct ApiClient::TlsMaterial {
  StorePtr configured_cas; // null: the system's trust store
  X509Ptr client_certificate;
  KeyPtr client_key;
};

void WatchStop::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  if (active_ != nullptr) {
    active_->stop(); // shuts the socket down: the blocked read returns
  }
}

Result<std::unique_ptr<ApiClient>> ApiClient::fromConfig(const ApiConfig& config,
                                                         ClientOptions options, ClockPtr clock) {
  Result<ServerAddress> address = parseServerUrl(config.server);
  if (!address) {
    return address.error();
  }
  auto tls = std::make_unique<TlsMaterial>();
  if (!config.ca_pem.empty()) {
    std::vector<X509Ptr> cas = readCertificates(config.ca_pem);
    if (cas.empty()) {
      return makeError("certificate authority: no PEM certificate in it");
    }
    tls->configured_cas.reset(X509_STORE_new());
    for (const X509Ptr& ca : cas) {
      X509_STORE_add_cert(tls->configured_cas.get(), ca.get());
    }
  }
  if (!config.client_certificate_pem.empty()) {
    std::vector<X509Ptr> certificates = readCertificates(config.client_certificate_pem);
    if (certificates.empty()) {
      return makeError("client certificate: no PEM certificate in it");
    }
    tls->client_certificate = std::move(certificates.front());
    const BioPtr key_bio = memoryBio(config.client_key_pem);
    tls->client_key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    ERR_clear_error();
    if (!tls->client_key) {
      return makeError("client key: no PEM private key in it");
    }
    if (X509_check_private_key(tls->client_certificate.get(), tls->client_key.get()) != 1) {
      ERR_clear_error();
      return makeError("client key does not belong to the client certificate");
    }
  }
  auto token = std::make_unique<BearerToken>(config.token, config.token_file, readWholeFile,
                                             std::move(clock));
  if (Result<std::string> first = token->current(); !first) {
    return first.error();
  }
  return std::unique_ptr<ApiClient>(
      new ApiClient(std::move(*address), std::move(tls), std::move(options), std::move(token)));
}

ApiClient::ApiClient(ServerAddress address, std::unique_ptr<TlsMaterial> tls, ClientOptions options,
                     std::unique_ptr<BearerToken> token)
    : address_(std::move(address)), tls_(std::move(tls)), options_(std::move(options)),
      token_(std::move(token)) {}

ApiClient::~ApiClient() = default;

std::unique_ptr<httplib::SSLClient>
ApiClient::connect(std::chrono::milliseconds read_timeout) const {
  std::unique_ptr<httplib::SSLClient> connection =
      tls_->client_certificate
          ? std::make_unique<httplib::SSLClient>(address_.host, address_.port,
                                                 tls_->client_certificate.get(),
                                                 tls_->client_key.get())
          : std::make_unique<httplib::SSLClient>(address_.host, address_.port);
  connection->enable_server_certificate_verification(true);
  if (tls_->configured_cas) {
    SSL_CTX_set_cert_verify_callback(connection->ssl_context(), verifyAgainstConfiguredCas,
                                     tls_->configured_cas.get());
  }
  connection->set_keep_alive(true);
  connection->set_connection_timeout(options_.connect_timeout);
  connection->set_read_timeout(read_timeout);
  connection->set_write_timeout(options_.request_timeout);
  return connection;
}

std::unique_ptr<httplib::SSLClient> ApiClient::takeConnection() {
  {
    std::lock_guard<std::mutex> lock(idle_mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<httplib::SSLClient> connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  return connect(options_.request_timeout);
}

void ApiClient::keepConnection(std::unique_ptr<httplib::SSLClient> connection) {
  std::lock_guard<std::mutex> lock(idle_mutex_);
  if (idle_.size() < options_.max_idle_connections) {
    idle_.push_back(std::move(connection));
  }
}

ApiError ApiClient::transportError(const char* method, const std::string& path,
                                   const httplib::SSLClient& connection, int error) const {
  const auto kind = static_cast<httplib::Error>(error);
  std::string what = httplib::to_string(kind);
  if (kind == httplib::Error::Connection) { // httplib's word alone: "Connection"
    what = "cannot connect (no route, refused or timed out)";
  } else if (kind == httplib::Error::SSLServerVerification) {
    const long verify = connection.get_openssl_verify_result();
    what = verify == X509_V_OK ? "the server's certificate does not name " + address_.host
                               : std::string("the server's certificate is not trusted: ") +
                                     X509_verify_cert_error_string(verify);
  }
  return ApiError{0, "",
                  std::string(method) + " https://" + address_.host + ":" +
                      std::to_string(address_.port) + address_.path_prefix + path + ": " + what};
}

ApiResult<ApiClient::Answer> ApiClient::exchange(const char* method, const std::string& path,
                                                 const std::string& body) {
  // A second try after a 401 with a token file (rotated under us) and after a GET on a kept
  // connection that the server had closed.
  for (int attempt = 0;; ++attempt) {
    httplib::Request request;
    request.method = method;
    request.path = address_.path_prefix + path;
    request.headers = requestHeaders(options_.user_agent, token_->current().value());
    if (!body.empty()) {
      request.headers.emplace("Content-Type", "application/json");
      request.body = body;
    }
    std::unique_ptr<httplib::SSLClient> connection = takeConnection();
    const bool reused = connection->is_socket_open() != 0;
    httplib::Result result = connection->send(request);
    if (!result) {
      if (reused && attempt == 0 && std::string_view(method) == "GET") {
        continue;
      }
      return transportError(method, path, *connection, static_cast<int>(result.error()));
    }
    Answer answer{result->status, std::move(result->body),
                  parseRetryAfter(result->get_header_value("Retry-After"))};
    keepConnection(std::move(connection));
    if (answer.status == 401 && token_->fromFile() && attempt == 0) {
      token_->expire();
      continue;
    }
    return answer;
  }
}

ApiResult<json> ApiClient::call(const char* method, const std::string& path, const json* body) {
  ApiResult<json> outcome = [&]() -> ApiResult<json> {
    ApiResult<Answer> answer = exchange(method, path, body != nullptr ? body->dump() : "");
    if (!answer) {
      return answer.error();
    }
    if (answer->status < 200 || answer->status >= 300) {
      ApiError error = errorFromAnswer(answer->status, answer->body);
      error.retry_after = answer->retry_after;
      return error;
    }
    return parseApiJson(answer->body, answer->status, std::string(method) + " " + path + " answer");
  }();
  if (!outcome && options_.on_error) {
    options_.on_error(outcome.error());
  }
  return outcome;
}

ApiResult<json> ApiClient::get(const std::string& path) {
  return call("GET", path, nullptr);
}

ApiResult<ObjectList> ApiClient::list(const std::string& collection_path,
                                      const ListOptions& options) {
  ApiResult<json> answer =
      get(withQuery(collection_path, {{"fieldSelector", options.field_selector}}));
  if (!answer) {
    return answer.error();
  }
  const json& body = *answer;
  if (!body.is_object() || !body.contains("items") ||
      !(body["items"].is_array() || body["items"].is_null())) {
    return ApiError{200, "", "LIST " + collection_path + ": answer is not a list (no 'items')"};
  }
  ObjectList list;
  list.resource_version = resourceVersionOf(body);
  if (body["items"].is_array()) {
    list.items = body["items"].get<std::vector<json>>();
  }
  return list;
}

ApiResult<json> ApiClient::create(const std::string& collection_path, const json& object) {
  return call("POST", collection_path, &object);
}

ApiResult<json> ApiClient::update(const std::string& path, const json& object) {
  return call("PUT", path, &object);
}

ApiResult<json> ApiClient::remove(const std::string& path) {
  return call("DELETE", path, nullptr);
}

ApiResult<std::string> ApiClient::watch(const std::string& collection_path,
                                        const WatchOptions& options, const WatchHandler& on_event,
                                        WatchStop& stop) {
  // Its own connection: the stream holds it for minutes.
  std::unique_ptr<httplib::SSLClient> connection =
      connect(std::chrono::seconds(options.timeout_seconds) + options_.request_timeout);
  {
    std::lock_guard<std::mutex> lock(stop.mutex_);
    if (stop.stopped_) {
      return options.resource_version;
    }
    stop.active_ = connection.get();
  }
  const std::string path =
      withQuery(collection_path, {{"watch", "1"},
                                  {"resourceVersion", options.resource_version},
                                  {"fieldSelector", options.field_selector},
                                  {"timeoutSeconds", std::to_string(options.timeout_seconds)},
                                  {"allowWatchBookmarks", "true"}});
  const httplib::Headers headers = requestHeaders(options_.user_agent, token_->current().value());

  std::string last_version = options.resource_version;
  int status = 0;
  std::chrono::seconds retry_after{0};
  std::string error_body;
  WatchLineBuffer lines;
  std::optional<ApiError> failure;
  const httplib::Result result = connection->Get(
      address_.path_prefix + path, headers,
      [&](const httplib::Response& response) {
        status = response.status;
        retry_after = parseRetryAfter(response.get_header_value("Retry-After"));
        return true;
      },
      [&](const char* data, size_t length) {
        if (status != 200) {
          error_body.append(data, length);
          return error_body.size() < kMaxErrorBodyBytes;
        }
        lines.append(std::string_view(data, length));
        std::string line;
        while (lines.nextLine(line)) {
          if (line.empty()) {
            continue;
          }
          ApiResult<WatchEvent> event = parseWatchEvent(line);
          if (!event) {
            failure = event.error();
            return false;
          }
          if (event->type == "ERROR") {
            failure = errorFromStatus(event->object, 0);
            return false;
          }
          if (std::string version = resourceVersionOf(event->object); !version.empty()) {
            last_version = std::move(version);
          }
          if (event->type != "BOOKMARK") {
            on_event(*event);
          }
        }
        return true;
      });
  {
    std::lock_guard<std::mutex> lock(stop.mutex_);
    stop.active_ = nullptr;
    if (stop.stopped_) {
      return last_version;
    }
  }
  ApiError error;
  if (failure) {
    error = *failure;
  } else if (status != 0 && status != 200) {
    if (status == 401) {
      token_->expire();
    }
    error = errorFromAnswer(status, error_body);
    error.retry_after = retry_after;
  } else if (!result) {
    error = transportError("WATCH", path, *connection, static_cast<int>(result.error()));
  } else {
    return last_version;
  }
  if (options_.on_error) {
    options_.on_error(error);
  }
  return error;
}

} // namespace kube_rdma
