#include "test/apiserver/api_server_simulator.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <chrono>
#include <ctime>
#include <algorithm>
#include <functional>
#include <sstream>
#include <vector>

namespace kube_rdma {
namespace {

using json = nlohmann::json;

// The resource types served, with the field selectors the real server supports for each.
struct ResourceType {
  const char* group;
  const char* version;
  const char* plural;
  const char* kind;
  bool namespaced;
  bool status_subresource; // status is written through /status only: create and update keep it
  bool has_generation;     // metadata.generation: 1 at create, +1 when spec changes
  std::vector<std::string> fields;
};

const std::vector<ResourceType>& resourceTypes() {
  static const auto* types = new std::vector<ResourceType>{
      {"", "v1", "nodes", "Node", false, true, false, {"metadata.name", "spec.unschedulable"}},
      {"", "v1", "events", "Event", true, false, false, {"metadata.name", "metadata.namespace"}},
      {"resource.k8s.io",
       "v1",
       "resourceslices",
       "ResourceSlice",
       false,
       false,
       true,
       {"metadata.name", "spec.nodeName", "spec.driver"}},
      {"resource.k8s.io",
       "v1",
       "resourceclaims",
       "ResourceClaim",
       true,
       true,
       true,
       {"metadata.name", "metadata.namespace"}},
      {"resource.k8s.io",
       "v1",
       "resourceclaimtemplates",
       "ResourceClaimTemplate",
       true,
       false,
       true,
       {"metadata.name", "metadata.namespace"}},
  };
  return *types;
}

const ResourceType* findType(const std::string& group, const std::string& version,
                             const std::string& plural) {
  for (const ResourceType& type : resourceTypes()) {
    if (group == type.group && version == type.version && plural == type.plural) {
      return &type;
    }
  }
  return nullptr;
}

const ResourceType* findType(const std::string& plural) {
  for (const ResourceType& type : resourceTypes()) {
    if (plural == type.plural) {
      return &type;
    }
  }
  return nullptr;
}

std::string apiVersionOf(const ResourceType& type) {
  return std::string(type.group).empty() ? type.version
                                         : std::string(type.group) + "/" + type.version;
}

// "resourceslices.resource.k8s.io", "nodes": how messages name a resource.
std::string qualified(const ResourceType& type) {
  return std::string(type.group).empty() ? type.plural
                                         : std::string(type.plural) + "." + type.group;
}

std::string keyOf(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

std::string stringAt(const json& object, const char* section, const char* field) {
  const auto outer = object.find(section);
  if (outer == object.end() || !outer->is_object()) {
    return "";
  }
  const auto value = outer->find(field);
  return value != outer->end() && value->is_string() ? value->get<std::string>() : "";
}

std::string now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// What the server does to the devices of a ResourceSlice it is about to store: taints get their
// timeAdded; the fields of a feature it lacks are dropped.
void admitDevices(json& slice, bool taints, bool consumable_capacity) {
  if (!slice.contains("spec") || !slice["spec"].is_object() || !slice["spec"].contains("devices") ||
      !slice["spec"]["devices"].is_array()) {
    return;
  }
  for (json& device : slice["spec"]["devices"]) {
    if (!device.is_object()) {
      continue;
    }
    if (!consumable_capacity) {
      device.erase("allowMultipleAllocations");
      if (device.contains("capacity") && device["capacity"].is_object()) {
        for (auto& [name, capacity] : device["capacity"].items()) {
          if (capacity.is_object()) {
            capacity.erase("requestPolicy");
          }
        }
      }
    }
    if (!device.contains("taints")) {
      continue;
    }
    if (!taints) {
      device.erase("taints");
      continue;
    }
    for (json& taint : device["taints"]) {
      if (taint.is_object() && !taint.contains("timeAdded")) {
        taint["timeAdded"] = now();
      }
    }
  }
}

// The Status object of a failure, shaped like the real server's (metav1.Status).
json statusBody(int code, const std::string& reason, const std::string& message,
                json details = json()) {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  if (!details.is_null()) {
    status["details"] = std::move(details);
  }
  return status;
}

json details(const ResourceType& type, const std::string& name, bool use_kind = false) {
  json out = json::object();
  if (!name.empty()) {
    out["name"] = name;
  }
  if (!std::string(type.group).empty()) {
    out["group"] = type.group;
  }
  out["kind"] = use_kind ? type.kind : type.plural;
  return out;
}

void reply(httplib::Response& response, int code, const json& body) {
  response.status = code;
  response.set_content(body.dump(), "application/json");
}

void fail(httplib::Response& response, int code, const std::string& reason,
          const std::string& message, json detail = json()) {
  reply(response, code, statusBody(code, reason, message, std::move(detail)));
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) {
    parts.push_back(part);
  }
  return parts;
}

// A field's value as the field selector compares it: strings as they are, booleans as words,
// absent fields as "".
std::string fieldValue(const json& object, const std::string& field) {
  const json* node = &object;
  for (const std::string& part : split(field, '.')) {
    if (!node->is_object() || !node->contains(part)) {
      return "";
    }
    node = &(*node)[part];
  }
  if (node->is_string()) {
    return node->get<std::string>();
  }
  return node->is_boolean() ? (node->get<bool>() ? "true" : "false") : node->dump();
}

struct Requirement {
  std::string key;
  std::string op; // "=", "!=", "exists", "!exists"
  std::string value;
};

// Equality-based terms joined by commas (AND), as both selectors take them.
Result<std::vector<Requirement>> parseSelector(const std::string& text, bool labels) {
  std::vector<Requirement> requirements;
  if (text.find('(') != std::string::npos) {
    return makeError("set-based selectors (in, notin) are not served by the simulator");
  }
  for (std::string term : split(text, ',')) {
    if (term.empty()) {
      continue;
    }
    Requirement requirement;
    if (const size_t ne = term.find("!="); ne != std::string::npos) {
      requirement = {term.substr(0, ne), "!=", term.substr(ne + 2)};
    } else if (const size_t eq = term.find('='); eq != std::string::npos) {
      const size_t value_at = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      requirement = {term.substr(0, eq), "=", term.substr(value_at)};
    } else if (labels) {
      requirement = term.front() == '!' ? Requirement{term.substr(1), "!exists", ""}
                                        : Requirement{term, "exists", ""};
    } else {
      return makeError("invalid field selector: '" + term + "': no operator");
    }
    requirements.push_back(std::move(requirement));
  }
  return requirements;
}

bool satisfies(const std::vector<Requirement>& requirements, const json& object, bool labels) {
  for (const Requirement& requirement : requirements) {
    std::optional<std::string> value;
    if (labels) {
      const json labels_map = object["metadata"].value("labels", json::object());
      if (labels_map.contains(requirement.key) && labels_map[requirement.key].is_string()) {
        value = labels_map[requirement.key].get<std::string>();
      }
    } else {
      value = fieldValue(object, requirement.key);
    }
    const bool ok = requirement.op == "exists"    ? value.has_value()
                    : requirement.op == "!exists" ? !value.has_value()
                    : requirement.op == "="       ? value == requirement.value
                                                  : value != requirement.value;
    if (!ok) {
      return false;
    }
  }
  return true;
}

bool isDnsSubdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) {
      return false;
    }
  }
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return alnum(name.front()) && alnum(name.back());
}

json withoutVersion(json object) {
  object["metadata"].erase("resourceVersion");
  return object;
}

// A list item: list answers carry kind and apiVersion once, on the list.
json asListItem(json object) {
  object.erase("kind");
  object.erase("apiVersion");
  return object;
}

std::string eventLine(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

} // namespace

// One request, its path taken apart.
struct ApiServerSimulator::Call {
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;
  std::string verb;
  std::string user;
  std::vector<Requirement> labels;
  std::vector<Requirement> fields;

  bool matches(const json& object) const {
    if (!ns.empty() && stringAt(object, "metadata", "namespace") != ns) {
      return false;
    }
    return satisfies(labels, object, true) && satisfies(fields, object, false);
  }
};

namespace {

// The object's own namespace, when it gives one, must be the URL's.
bool namespaceAgrees(const ApiServerSimulator::Call& call, const json& object,
                     httplib::Response& response) {
  const std::string body_ns = stringAt(object, "metadata", "namespace");
  if (!body_ns.empty() && body_ns != call.ns) {
    fail(response, 400, "BadRequest",
         "the namespace of the provided object does not match the namespace sent on the request");
    return false;
  }
  return true;
}

void failNotFound(httplib::Response& response, const ResourceType& type, const std::string& name) {
  fail(response, 404, "NotFound", qualified(type) + " \"" + name + "\" not found",
       details(type, name));
}

void failMethodNotAllowed(httplib::Response& response) {
  fail(response, 405, "MethodNotAllowed",
       "the server does not allow this method on the requested resource");
}

} // namespace

ApiServerSimulator::ApiServerSimulator(SimulatorTls tls) : tls_(std::move(tls)) {}

ApiServerSimulator::~ApiServerSimulator() {
  stop();
}

Status ApiServerSimulator::start() {
  const SimulatorTls tls = tls_;
  server_ = std::make_unique<httplib::SSLServer>([tls](SSL_CTX& context) {
    // Ask for a client certificate, but let token users connect without one, like the real
    // server with --client-ca-file.
    SSL_CTX_set_verify(&context, SSL_VERIFY_PEER, nullptr);
    return SSL_CTX_use_certificate_chain_file(&context, tls.certificate_file.c_str()) == 1 &&
           SSL_CTX_use_PrivateKey_file(&context, tls.key_file.c_str(), SSL_FILETYPE_PEM) == 1 &&
           SSL_CTX_load_verify_locations(&context, tls.client_ca_file.c_str(), nullptr) == 1;
  });
  if (!server_->is_valid()) {
    return makeError("simulator: cannot load " + tls.certificate_file + " / " + tls.key_file);
  }
  for (const char* method : {"GET", "POST", "PUT", "DELETE"}) {
    const std::string verb = method;
    const auto handler = [this, verb](const httplib::Request& request,
                                      httplib::Response& response) {
      handle(request, response, verb);
    };
    if (verb == "GET") {
      server_->Get(".*", handler);
    } else if (verb == "POST") {
      server_->Post(".*", handler);
    } else if (verb == "PUT") {
      server_->Put(".*", handler);
    } else {
      server_->Delete(".*", handler);
    }
  }
  // The real server (Go's net/http) neither limits the requests on one connection nor closes an
  // idle one within a test's span; cpp-httplib's defaults (5 requests, 5 s) would.
  server_->set_keep_alive_max_count(1000000);
  server_->set_keep_alive_timeout(90);
  // Go's net package sets TCP_NODELAY on every connection. Without it an answer's headers and body
  // (two writes) wait for the client's delayed ACK: about 40 ms per request on a kept connection.
  server_->set_tcp_nodelay(true);
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) {
    return makeError("simulator: cannot bind 127.0.0.1");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // cpp-httplib's stop() does nothing before the server runs: a test that stops the simulator
  // right away would otherwise join a thread that accepts forever.
  while (!server_->is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Ok{};
}

void ApiServerSimulator::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (server_) {
    server_->stop();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

void ApiServerSimulator::addToken(const std::string& token, const std::string& user) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_[token] = user;
}

void ApiServerSimulator::removeToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_.erase(token);
}

void ApiServerSimulator::allow(const std::string& user, const std::string& verb,
                               const std::string& plural) {
  std::lock_guard<std::mutex> lock(mutex_);
  rules_[user].insert(verb + " " + plural);
}

void ApiServerSimulator::failNext(int count, int http_status) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_left_ = count;
  failure_status_ = http_status;
}

void ApiServerSimulator::compactHistory() {
  std::lock_guard<std::mutex> lock(mutex_);
  history_.clear();
  history_start_ = version_;
  changed_.notify_all();
}

size_t ApiServerSimulator::connectionCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return client_ports_.size();
}

uint64_t ApiServerSimulator::resourceVersion() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

json ApiServerSimulator::put(const std::string& plural, json object) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ResourceType* type = findType(plural);
  const std::string key =
      keyOf(stringAt(object, "metadata", "namespace"), stringAt(object, "metadata", "name"));
  object["kind"] = type->kind;
  object["apiVersion"] = apiVersionOf(*type);
  auto& objects = objects_[plural];
  const auto existing = objects.find(key);
  if (existing == objects.end()) {
    object["metadata"]["uid"] = newUidLocked();
    object["metadata"]["creationTimestamp"] = now();
    return storeLocked(plural, std::move(object), "ADDED", json());
  }
  object["metadata"]["uid"] = existing->second["metadata"]["uid"];
  object["metadata"]["creationTimestamp"] = existing->second["metadata"]["creationTimestamp"];
  return storeLocked(plural, std::move(object), "MODIFIED", existing->second);
}

bool ApiServerSimulator::remove(const std::string& plural, const std::string& ns,
                                const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto& objects = objects_[plural];
  if (objects.find(keyOf(ns, name)) == objects.end()) {
    return false;
  }
  deleteLocked(plural, keyOf(ns, name));
  return true;
}

std::optional<json> ApiServerSimulator::object(const std::string& plural, const std::string& ns,
                                               const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto objects = objects_.find(plural);
  if (objects == objects_.end()) {
    return std::nullopt;
  }
  const auto found = objects->second.find(keyOf(ns, name));
  return found == objects->second.end() ? std::nullopt : std::optional<json>(found->second);
}

std::vector<json> ApiServerSimulator::objects(const std::string& plural) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<json> listed;
  const auto objects = objects_.find(plural);
  if (objects != objects_.end()) {
    for (const auto& [key, object] : objects->second) {
      listed.push_back(object);
    }
  }
  return listed;
}

json ApiServerSimulator::storeLocked(const std::string& plural, json object, const char* type,
                                     json previous) {
  object["metadata"]["resourceVersion"] = std::to_string(++version_);
  const std::string key =
      keyOf(stringAt(object, "metadata", "namespace"), stringAt(object, "metadata", "name"));
  objects_[plural][key] = object;
  history_.push_back(Event{version_, type, plural, object, std::move(previous)});
  changed_.notify_all();
  return object;
}

// UIDs shaped like the real ones (RFC 4122 version 4), unique within the simulator's life.
std::string ApiServerSimulator::newUidLocked() {
  return "00000000-0000-4000-8000-" + std::to_string(100000000000 + next_uid_++);
}

json ApiServerSimulator::deleteLocked(const std::string& plural, const std::string& key) {
  auto& objects = objects_[plural];
  json deleted = objects[key];
  objects.erase(key);
  json as_event = deleted;
  as_event["metadata"]["resourceVersion"] = std::to_string(++version_);
  history_.push_back(Event{version_, "DELETED", plural, as_event, json()});
  changed_.notify_all();
  return deleted;
}

std::optional<std::string> ApiServerSimulator::authenticate(const httplib::Request& request) const {
  const std::string authorization = request.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.compare(0, kBearer.size(), kBearer) == 0) {
    const auto user = tokens_.find(authorization.substr(kBearer.size()));
    return user == tokens_.end() ? std::nullopt : std::optional<std::string>(user->second);
  }
  if (request.ssl == nullptr) {
    return std::nullopt;
  }
  auto* ssl = const_cast<SSL*>(request.ssl);
  X509* certificate = SSL_get1_peer_certificate(ssl);
  if (certificate == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    X509_free(certificate);
    return std::nullopt;
  }
  char common_name[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, common_name,
                            sizeof common_name);
  X509_free(certificate);
  return std::string(common_name);
}

void ApiServerSimulator::holdRequests() {
  std::lock_guard<std::mutex> lock(mutex_);
  holding_ = true;
}

void ApiServerSimulator::resumeRequests() {
  std::lock_guard<std::mutex> lock(mutex_);
  holding_ = false;
  changed_.notify_all();
}

void ApiServerSimulator::handle(const httplib::Request& request, httplib::Response& response,
                                const std::string& method) {
  ++requests_;
  Call call;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !holding_ || stopping_; });
    client_ports_.insert(request.remote_port);
    if (failures_left_ > 0) {
      --failures_left_;
      switch (failure_status_) {
      case 429:
        response.set_header("Retry-After", "1");
        fail(response, 429, "TooManyRequests", "Too many requests, please try again later.",
             {{"retryAfterSeconds", 1}});
        return;
      case 503:
        fail(response, 503, "ServiceUnavailable",
             "the server is currently unable to handle the request");
        return;
      default:
        fail(response, failure_status_, "InternalError",
             "Internal error occurred: injected by the test");
        return;
      }
    }
    std::optional<std::string> user = authenticate(request);
    if (!user) {
      fail(response, 401, "Unauthorized", "Unauthorized");
      return;
    }
    call.user = *user;
  }

  // /api/v1/... or /apis/<group>/<version>/..., then [namespaces/<ns>/]<plural>[/<name>].
  std::vector<std::string> segments = split(request.path.substr(1), '/');
  std::string group;
  size_t at = 0;
  if (segments.size() >= 2 && segments[0] == "api") {
    at = 1;
  } else if (segments.size() >= 3 && segments[0] == "apis") {
    group = segments[1];
    at = 2;
  } else {
    fail(response, 404, "NotFound", "the server could not find the requested resource",
         json::object());
    return;
  }
  const std::string version = segments[at++];
  if (segments.size() > at + 2 && segments[at] == "namespaces") {
    call.ns = segments[at + 1];
    at += 2;
  }
  const std::string plural = at < segments.size() ? segments[at++] : "";
  call.name = at < segments.size() ? segments[at++] : "";
  call.type = findType(group, version, plural);
  if (call.type == nullptr || at != segments.size() ||
      (!call.type->namespaced && !call.ns.empty()) ||
      (call.type->namespaced && call.ns.empty() && !call.name.empty())) {
    fail(response, 404, "NotFound", "the server could not find the requested resource",
         json::object());
    return;
  }
  const bool watching =
      request.get_param_value("watch") == "1" || request.get_param_value("watch") == "true";
  call.verb = method == "POST"     ? "create"
              : method == "PUT"    ? "update"
              : method == "DELETE" ? "delete"
              : !call.name.empty() ? "get"
              : watching           ? "watch"
                                   : "list";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto rules = rules_.find(call.user);
    if (rules != rules_.end() && rules->second.count(call.verb + " " + plural) == 0) {
      const std::string subject =
          qualified(*call.type) + (call.name.empty() ? "" : " \"" + call.name + "\"");
      const std::string scope =
          call.ns.empty() ? "at the cluster scope" : "in the namespace \"" + call.ns + "\"";
      fail(response, 403, "Forbidden",
           subject + " is forbidden: User \"" + call.user + "\" cannot " + call.verb +
               " resource \"" + plural + "\" in API group \"" + group + "\" " + scope,
           details(*call.type, call.name));
      return;
    }
  }
  Result<std::vector<Requirement>> labels =
      parseSelector(request.get_param_value("labelSelector"), true);
  Result<std::vector<Requirement>> fields =
      parseSelector(request.get_param_value("fieldSelector"), false);
  if (!labels || !fields) {
    fail(response, 400, "BadRequest", (!labels ? labels : fields).error().message);
    return;
  }
  for (const Requirement& field : *fields) {
    if (std::find(call.type->fields.begin(), call.type->fields.end(), field.key) ==
        call.type->fields.end()) {
      fail(response, 400, "BadRequest", "field label not supported: " + field.key);
      return;
    }
  }
  call.labels = std::move(*labels);
  call.fields = std::move(*fields);

  if (method == "GET") {
    if (watching) {
      serveWatch(call, request, response);
    } else {
      serveGet(call, request, response);
    }
  } else if (method == "POST") {
    if (!call.name.empty()) {
      failMethodNotAllowed(response);
      return;
    }
    serveCreate(call, request, response);
  } else if (call.name.empty()) {
    failMethodNotAllowed(response);
  } else if (method == "PUT") {
    serveUpdate(call, request, response);
  } else {
    serveDelete(call, response);
  }
}

void ApiServerSimulator::serveGet(const Call& call, const httplib::Request& /*request*/,
                                  httplib::Response& response) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto& objects = objects_[call.type->plural];
  if (!call.name.empty()) {
    const auto found = objects.find(keyOf(call.ns, call.name));
    if (found == objects.end()) {
      failNotFound(response, *call.type, call.name);
      return;
    }
    reply(response, 200, found->second);
    return;
  }
  json items = json::array();
  for (const auto& [key, object] : objects) {
    if (call.matches(object)) {
      items.push_back(asListItem(object));
    }
  }
  reply(response, 200,
        {{"kind", std::string(call.type->kind) + "List"},
         {"apiVersion", apiVersionOf(*call.type)},
         {"metadata", {{"resourceVersion", std::to_string(version_)}}},
         {"items", items}});
}

void ApiServerSimulator::serveCreate(const Call& call, const httplib::Request& request,
                                     httplib::Response& response) {
  json object = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object() || (object.contains("metadata") && !object["metadata"].is_object())) {
    fail(response, 400, "BadRequest", "the body of the request was in an unknown format");
    return;
  }
  const ResourceType& type = *call.type;
  if (object.contains("apiVersion") && object["apiVersion"] != apiVersionOf(type)) {
    fail(response, 400, "BadRequest",
         "the API version in the data (" + object["apiVersion"].dump() +
             ") does not match the expected API version (" + apiVersionOf(type) + ")");
    return;
  }
  if (object.contains("kind") && object["kind"] != type.kind) {
    fail(response, 400, "BadRequest",
         "the kind in the data (" + object["kind"].dump() + ") does not match the expected kind (" +
             type.kind + ")");
    return;
  }
  object["apiVersion"] = apiVersionOf(type);
  object["kind"] = type.kind;
  json& metadata = object["metadata"];
  if (metadata.is_null()) {
    metadata = json::object();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::string name = stringAt(object, "metadata", "name");
  const std::string generate = stringAt(object, "metadata", "generateName");
  if (name.empty() && !generate.empty()) {
    // Like the real server's five random characters, without vowels (no words).
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t n = next_uid_ * 2654435761u;
    name = generate;
    for (int i = 0; i < 5; ++i, n /= 27) {
      name += kAlphabet[n % 27];
    }
    metadata["name"] = name;
  }
  const std::string qualified_kind =
      std::string(type.kind) +
      (std::string(type.group).empty() ? "" : std::string(".") + type.group);
  if (name.empty()) {
    fail(response, 422, "Invalid",
         qualified_kind +
             " \"\" is invalid: metadata.name: Required value: name or generateName is required",
         details(type, "", true));
    return;
  }
  if (!isDnsSubdomain(name)) {
    fail(response, 422, "Invalid",
         qualified_kind + " \"" + name + "\" is invalid: metadata.name: Invalid value: \"" + name +
             "\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
             "characters, '-' or '.', and must start and end with an alphanumeric character",
         details(type, name, true));
    return;
  }
  if (!namespaceAgrees(call, object, response)) {
    return;
  }
  if (!stringAt(object, "metadata", "resourceVersion").empty()) {
    fail(response, 400, "BadRequest", "resourceVersion should not be set on objects to be created");
    return;
  }
  if (call.type->namespaced) {
    metadata["namespace"] = call.ns;
  }
  if (objects_[type.plural].count(keyOf(call.ns, name)) != 0) {
    fail(response, 409, "AlreadyExists", qualified(type) + " \"" + name + "\" already exists",
         details(type, name));
    return;
  }
  metadata["uid"] = newUidLocked();
  metadata["creationTimestamp"] = now();
  if (type.has_generation) {
    metadata["generation"] = 1;
  }
  if (type.status_subresource) {
    object.erase("status");
  }
  if (type.plural == std::string("resourceslices")) {
    admitDevices(object, device_taints_, consumable_capacity_);
  }
  reply(response, 201, storeLocked(type.plural, std::move(object), "ADDED", json()));
}

void ApiServerSimulator::serveUpdate(const Call& call, const httplib::Request& request,
                                     httplib::Response& response) {
  json object = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    fail(response, 400, "BadRequest", "the body of the request was in an unknown format");
    return;
  }
  const ResourceType& type = *call.type;
  const std::string body_name = stringAt(object, "metadata", "name");
  if (body_name != call.name) {
    fail(response, 400, "BadRequest",
         "the name of the object (" + body_name + ") does not match the name on the URL (" +
             call.name + ")");
    return;
  }
  if (!namespaceAgrees(call, object, response)) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& objects = objects_[type.plural];
  const auto found = objects.find(keyOf(call.ns, call.name));
  if (found == objects.end()) {
    failNotFound(response, type, call.name);
    return;
  }
  const json& current = found->second;
  const std::string version = stringAt(object, "metadata", "resourceVersion");
  const std::string uid = stringAt(object, "metadata", "uid");
  const std::string current_uid = stringAt(current, "metadata", "uid");
  if (!uid.empty() && uid != current_uid) {
    fail(response, 409, "Conflict",
         "Operation cannot be fulfilled on " + qualified(type) + " \"" + call.name +
             "\": Precondition failed: UID in precondition: " + uid +
             ", UID in object meta: " + current_uid,
         details(type, call.name));
    return;
  }
  // No version: an unconditional update, which these types allow.
  if (!version.empty() && version != stringAt(current, "metadata", "resourceVersion")) {
    fail(response, 409, "Conflict",
         "Operation cannot be fulfilled on " + qualified(type) + " \"" + call.name +
             "\": the object has been modified; please apply your changes to the latest "
             "version and try again",
         details(type, call.name));
    return;
  }
  object["apiVersion"] = apiVersionOf(type);
  object["kind"] = type.kind;
  json& metadata = object["metadata"];
  if (type.namespaced) {
    metadata["namespace"] = call.ns;
  }
  metadata["uid"] = current_uid;
  metadata["creationTimestamp"] = current["metadata"]["creationTimestamp"];
  if (type.plural == std::string("resourceslices")) {
    admitDevices(object, device_taints_, consumable_capacity_);
  }
  if (type.has_generation) {
    const int generation = current["metadata"].value("generation", 1);
    metadata["generation"] =
        object.value("spec", json()) == current.value("spec", json()) ? generation : generation + 1;
  }
  if (type.status_subresource) {
    object.erase("status");
    if (current.contains("status")) {
      object["status"] = current["status"];
    }
  }
  metadata["resourceVersion"] = current["metadata"]["resourceVersion"];
  if (object == current) {
    reply(response, 200, current); // a no-op update writes nothing and keeps the version
    return;
  }
  json previous = current;
  reply(
      response, 200,
      storeLocked(type.plural, withoutVersion(std::move(object)), "MODIFIED", std::move(previous)));
}

void ApiServerSimulator::serveDelete(const Call& call, httplib::Response& response) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto& objects = objects_[call.type->plural];
  if (objects.find(keyOf(call.ns, call.name)) == objects.end()) {
    failNotFound(response, *call.type, call.name);
    return;
  }
  reply(response, 200, deleteLocked(call.type->plural, keyOf(call.ns, call.name)));
}

void ApiServerSimulator::serveWatch(const Call& call, const httplib::Request& request,
                                    httplib::Response& response) {
  const std::string version_text = request.get_param_value("resourceVersion");
  const std::string timeout_text = request.get_param_value("timeoutSeconds");
  uint64_t from = 0;
  if (!version_text.empty() && version_text != "0") {
    std::istringstream parse(version_text);
    if (!(parse >> from) || !parse.eof()) {
      fail(response, 400, "BadRequest", "invalid resource version: " + version_text);
      return;
    }
  }
  int timeout_seconds = 1800; // the real server picks 30 to 60 minutes
  if (!timeout_text.empty()) {
    std::istringstream parse(timeout_text);
    if (!(parse >> timeout_seconds) || !parse.eof() || timeout_seconds < 0) {
      fail(response, 400, "BadRequest", "invalid timeoutSeconds: " + timeout_text);
      return;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  std::string first_lines;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (from == 0) {
      // No version: the current state as ADDED events first, then the changes.
      for (const auto& [key, object] : objects_[call.type->plural]) {
        if (call.matches(object)) {
          first_lines += eventLine("ADDED", object);
        }
      }
      from = version_;
    } else if (from < history_start_) {
      // The real server answers 200 and an ERROR event: the status line is long gone by then.
      first_lines =
          eventLine("ERROR", statusBody(410, "Expired",
                                        "too old resource version: " + std::to_string(from) + " (" +
                                            std::to_string(history_start_ + 1) + ")"));
      from = UINT64_MAX;
    }
  }
  response.status = 200;
  response.set_chunked_content_provider(
      "application/json", [this, call, from, deadline,
                           first_lines](size_t /*offset*/, httplib::DataSink& sink) mutable {
        if (!first_lines.empty()) {
          const bool written = sink.write(first_lines.data(), first_lines.size());
          first_lines.clear();
          return written;
        }
        if (from == UINT64_MAX) {
          sink.done();
          return true;
        }
        std::string lines;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          changed_.wait_until(lock, deadline, [&] { return stopping_ || version_ > from; });
          if (stopping_ || std::chrono::steady_clock::now() >= deadline) {
            lock.unlock();
            sink.done();
            return true;
          }
          for (const Event& event : history_) {
            if (event.version <= from || event.plural != call.type->plural) {
              continue;
            }
            const bool now_matches = call.matches(event.object);
            const bool was_matching = !event.previous.is_null() && call.matches(event.previous);
            std::string type = event.type;
            if (type == "MODIFIED" && now_matches != was_matching) {
              type = now_matches ? "ADDED" : "DELETED";
            } else if (!now_matches) {
              continue;
            }
            lines += eventLine(type, event.object);
          }
          from = version_;
        }
        return lines.empty() || sink.write(lines.data(), lines.size());
      });
}

} // namespace kube_rdma
