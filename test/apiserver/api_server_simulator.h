#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/util/result.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
} // namespace httplib

// A test double of the Kubernetes API server: the REST conventions of the real one (Status
// bodies, resourceVersion, conflicts, selectors, watch) for nodes, events and the
// resource.k8s.io/v1 DRA types, over real TLS with bearer tokens and client certificates. What it
// does and where it simplifies: docs/kubeclient.md "The API server simulator".
namespace kube_rdma {

struct SimulatorTls {
  std::string certificate_file; // the server's, for 127.0.0.1
  std::string key_file;
  std::string client_ca_file; // client certificates signed by it authenticate as their CN
};

class ApiServerSimulator {
public:
  explicit ApiServerSimulator(SimulatorTls tls);
  ~ApiServerSimulator();
  ApiServerSimulator(const ApiServerSimulator&) = delete;
  ApiServerSimulator& operator=(const ApiServerSimulator&) = delete;

  // Listens on 127.0.0.1 on a free port and serves on a thread of its own.
  Status start();
  void stop();
  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  // Authentication: a bearer token stands for `user`; removing it makes it fail with 401.
  void addToken(const std::string& token, const std::string& user);
  void removeToken(const std::string& token);
  // Authorization: once a user has a rule, only "verb plural" pairs granted are allowed (verbs
  // get, list, watch, create, update, delete); users without rules may do everything.
  void allow(const std::string& user, const std::string& verb, const std::string& plural);

  // Test hooks acting like another client: store (create or replace, no version check) and
  // delete an object, with the watch events they cause. `plural` as in the URL.
  nlohmann::json put(const std::string& plural, nlohmann::json object);
  bool remove(const std::string& plural, const std::string& ns, const std::string& name);
  std::optional<nlohmann::json> object(const std::string& plural, const std::string& ns,
                                       const std::string& name) const;
  // Every stored object of `plural`, read without a request (so failNext is not spent on it).
  std::vector<nlohmann::json> objects(const std::string& plural) const;
  // The next `count` requests are answered `http_status` (500, 429 with Retry-After, 503) with
  // a Status body, before authentication, as an overloaded server would.
  void failNext(int count, int http_status);
  // From holdRequests() until resumeRequests(), requests are counted and then wait, as at a slow
  // server (stop() releases them too).
  void holdRequests();
  void resumeRequests();
  // A ResourceSlice's device taints: stored with timeAdded stamped where the client left it out,
  // as the real server does; after this call dropped, as by a server without the feature
  // (before Kubernetes 1.37 with the gate DRADeviceTaints off).
  void disableDeviceTaints() { device_taints_ = false; }
  // A device's allowMultipleAllocations and its capacities' requestPolicy dropped, as by a server
  // without consumable capacity (before 1.37 with the gate DRAConsumableCapacity off).
  void disableConsumableCapacity() { consumable_capacity_ = false; }
  // Forgets the change history, as etcd's compaction does: a watch from an older version gets
  // 410 Expired.
  void compactHistory();
  // Requests received (all of them, failures included) and TCP connections they came on.
  size_t requestCount() const { return requests_; }
  size_t connectionCount() const;
  // The current global resourceVersion.
  uint64_t resourceVersion() const;

private:
  struct Event {
    uint64_t version;
    std::string type; // ADDED, MODIFIED, DELETED
    std::string plural;
    nlohmann::json object;
    nlohmann::json previous; // the object before a MODIFIED; null otherwise
  };

public:
  struct Call; // one parsed request

private:
  void handle(const httplib::Request& request, httplib::Response& response,
              const std::string& method);
  void serveGet(const Call& call, const httplib::Request& request, httplib::Response& response);
  void serveCreate(const Call& call, const httplib::Request& request, httplib::Response& response);
  void serveUpdate(const Call& call, const httplib::Request& request, httplib::Response& response);
  void serveDelete(const Call& call, httplib::Response& response);
  void serveWatch(const Call& call, const httplib::Request& request, httplib::Response& response);
  std::optional<std::string> authenticate(const httplib::Request& request) const;

  // Under mutex_.
  nlohmann::json storeLocked(const std::string& plural, nlohmann::json object, const char* type,
                             nlohmann::json previous);
  nlohmann::json deleteLocked(const std::string& plural, const std::string& key);
  std::string newUidLocked();

  SimulatorTls tls_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  uint64_t version_ = 1;
  uint64_t history_start_ = 1; // events after this version are kept
  uint64_t next_uid_ = 1;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_; // plural → ns/name → obj
  std::deque<Event> history_;
  std::map<std::string, std::string> tokens_;          // token → user
  std::map<std::string, std::set<std::string>> rules_; // user → "verb plural"
  bool holding_ = false;
  int failures_left_ = 0;
  int failure_status_ = 500;
  std::set<int> client_ports_;
  std::atomic<size_t> requests_{0};
  std::atomic<bool> device_taints_{true};
  std::atomic<bool> consumable_capacity_{true};
};

} // namespace kube_rdma
