// kube-rdma-demo: the whole flow on one machine, with no cluster and no RDMA card. It makes a CA
// and a serving certificate, starts rdma-webhook (TLS on loopback) and rdma-device-plugin over a
// copy of the bundled A100 RoCE fixture with the kubelet simulator, sends the guide's PyTorchJob
// pods as AdmissionReviews, has the kubelet call Allocate, and shows each container's final NCCL
// environment with the layer every value came from, and the real libnccl reading the nccl.conf.
// Then the DRA path on the same node: rdma-dra-driver against the API-server simulator publishes
// the ResourceSlice, a claim of examples/dra/gpu-with-nic.yaml is allocated as the scheduler
// would (a NIC on the chosen GPU's pcieRoot), the demo calls NodePrepareResources as the kubelet
// does, shows the claim's CDI spec, and libnccl reads the claim's nccl.conf. Every step checks
// its own result; the exit code is non-zero when one failed.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "common/pools/nccl_settings.h"
#include "test/e2e/demo_console.h"
#include "test/e2e/demo_dra.h"
#include "test/e2e/demo_report.h"
#include "test/plugin/kubelet_simulator.h"
#include "test/plugin/plugin_process.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kResource = "rdma/shared";
constexpr const char* kServiceName = "rdma-webhook.kube-rdma.svc"; // what the API server dials
constexpr const char* kNode = "a100-roce";
const std::string kDataNics = "=mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,"
                              "mlx5_8:1";
constexpr int kSteps = 10; // sections here (1-7) and in demo_dra.cc (8-10); all must pass

// The pods sent, as the training operator creates them from the examples (test/e2e/pods/).
struct DemoPod {
  std::string file;
  std::string mirrors;
};
const std::vector<DemoPod> kPods = {
    {"roce-master.json", "examples/pytorchjob-roce.yaml, Master"},
    {"shorthand-worker.json", "examples/pytorchjob-shorthand.yaml, Worker"},
    {"roce-worker-user-hca.json",
     "examples/pytorchjob-roce.yaml, Worker, with the user's own NCCL_IB_HCA line"},
};

// Children and the temp dir, for interrupts: the signal handler kills the children (kill() is
// async-signal-safe) and wakes a thread through a pipe, which removes the directory and exits.
std::atomic<pid_t> g_children[3] = {0, 0, 0};
std::string g_temp_dir;
int g_interrupt_pipe[2] = {-1, -1};

// Runs a command and returns its stdout, or an Error naming the command and its exit status.
Result<std::string> capture(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return makeError("cannot run " + command);
  }
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) {
    out.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  if (status != 0) {
    return makeError(command + " exited with status " + std::to_string(status));
  }
  return out;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

Result<std::string> base64Decode(const std::string& text) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || text.size() % 4 != 0) {
    return makeError("patch is not base64");
  }
  // EVP_DecodeBlock counts the '=' padding as zero bytes.
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) {
    --size;
  }
  out.resize(size);
  return out;
}

// "overrides node, nccl.conf: =mlx5_1:1,...,mlx5_8:1": the losing layers, grouped by value, long
// values shortened to keep the table one screen wide.
std::string shadowedNote(const EnvOrigin& e) {
  std::vector<std::pair<std::string, std::string>> groups; // value -> sources
  for (const auto& layer : e.shadowed) {
    const auto& [source, value] = layer;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == layer.second; });
    if (it == groups.end()) {
      groups.emplace_back(value, source);
    } else {
      it->second += ", " + source;
    }
  }
  std::string note;
  for (const auto& [value, sources] : groups) {
    const std::string shown =
        value.size() > 32 ? value.substr(0, 10) + "..." + value.substr(value.size() - 10) : value;
    note += (note.empty() ? "overrides " : "; ") + sources + ": " + shown;
  }
  return note;
}

NcclEnv podEnv(const json& container) {
  NcclEnv env;
  for (const json& e : container.value("env", json::array())) {
    env.emplace_back(e.value("name", ""),
                     e.contains("value") ? e["value"].get<std::string>() : "(valueFrom)");
  }
  return env;
}

// The first container that asks for the RDMA resource, or null.
const json* rdmaContainer(const json& pod) {
  for (const json& c : pod["spec"]["containers"]) {
    if (c.contains("resources") && c["resources"].contains("limits") &&
        c["resources"]["limits"].contains(kResource)) {
      return &c;
    }
  }
  return nullptr;
}

class Demo {
public:
  Demo(std::string binary_dir, std::string source_dir, bool colour)
      : binary_dir_(std::move(binary_dir)), source_dir_(std::move(source_dir)),
        report_(colour, kSteps) {}

  int run() {
    std::cout << "kube-rdma demo: the guide's PyTorchJob on the bundled 8-GPU A100 RoCE node\n"
              << "(no cluster, no RDMA card; everything on loopback, in " << tmp_.path() << ")\n";
    g_temp_dir = tmp_.path();
    const bool started = certificates() && startPrograms();
    if (started) {
      nodeDevices();
      offeredResources();
      admission();
      allocate();
      environment();
    }
    stopPrograms();
    DraDemo dra(report_, {binary_dir_, source_dir_, node_, tmp_.path(), kNode}, g_children[2]);
    if (started && dra.startDriver()) {
      dra.gpuClaim();
      dra.claimNcclConf();
    }
    dra.stop();
    return report_.finish();
  }

private:
  std::string binary(const std::string& relative) const { return binary_dir_ + "/" + relative; }

  // 1. scripts/gen-webhook-certs.sh, as an operator without cert-manager runs it.
  bool certificates() {
    report_.section("A CA and the webhook's serving certificate (scripts/gen-webhook-certs.sh)");
    certs_ = tmp_.path() + "/certs";
    auto out = capture("bash " + shellQuote(source_dir_ + "/scripts/gen-webhook-certs.sh") +
                       " --out " + shellQuote(certs_) + " 2>&1");
    for (const std::string& l : splitLines(out.ok() ? *out : out.error().message)) {
      if (l.find("next: kubectl") == std::string::npos) { // advice for a cluster, not here
        report_.line(l);
      }
    }
    bool ok = report_.check(out.ok(), "the script made a CA and a certificate (and checked both)");
    for (const char* f : {"ca.crt", "tls.crt", "tls.key"}) {
      ok = report_.check(fs::exists(certs_ + "/" + f), certs_ + "/" + f) && ok;
    }
    return ok;
  }

  // 2. The webhook on loopback with that certificate; the kubelet simulator and the plugin over
  // a private copy of the fixture.
  bool startPrograms() {
    report_.section("rdma-webhook, the kubelet simulator and rdma-device-plugin");
    node_ = tmp_.path() + "/node";
    std::error_code error;
    fs::copy(std::string(KUBE_RDMA_FIXTURES) + "/" + kNode, node_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks, error);
    if (!report_.check(!error, std::string("fixture ") + kNode + " copied to " + node_ +
                                   (error ? ": " + error.message() : ""))) {
      return false;
    }

    webhook_ =
        startProgram(report_, binary("webhook/rdma-webhook"),
                     {"--tls-cert-file", certs_ + "/tls.crt", "--tls-private-key-file",
                      certs_ + "/tls.key", "--listen-address", "127.0.0.1:0", "--policy",
                      source_dir_ + "/manifests/base/webhook/policy.json", "--shutdown-delay", "0"},
                     tmp_.path() + "/rdma-webhook.log", g_children[0]);
    if (!webhook_) {
      return false;
    }
    const std::regex serving("serving address=[^ ]*:([0-9]+)");
    waitUntil(
        [&] {
          std::smatch m;
          const std::string logs = webhook_->logs();
          if (std::regex_search(logs, m, serving)) {
            port_ = std::stoi(m[1]);
          }
          return port_ != 0;
        },
        kDeadline);
    auto ready = client()->Get("/readyz");
    if (!report_.check(ready && ready->status == 200,
                       "rdma-webhook ready on https://127.0.0.1:" + std::to_string(port_) +
                           " (/readyz 200 over TLS verified as " + kServiceName + ")")) {
      report_.block(webhook_->logs());
      return false;
    }

    kubelet_ = std::make_unique<KubeletSimulator>(tmp_.sub("kubelet"));
    if (!report_.check(kubelet_->start().ok(),
                       "kubelet simulator serving " + kubelet_->dir() + "/kubelet.sock")) {
      return false;
    }
    state_dir_ = tmp_.path() + "/state";
    plugin_ = startProgram(report_, binary("plugin/rdma-device-plugin"),
                           {"--sysfs-root", node_ + "/sys", "--proc-root", node_ + "/proc",
                            "--dev-root", node_ + "/dev", "--device-plugin-dir", kubelet_->dir(),
                            "--plugin-registry-dir", tmp_.path() + "/no-plugins-registry",
                            "--state-dir", state_dir_, "--node-name", kNode},
                           tmp_.path() + "/rdma-device-plugin.log", g_children[1]);
    if (!plugin_) {
      return false;
    }
    const bool registered = kubelet_->waitFor(
        [](const KubeletView& v) {
          auto it = v.resources.find(kResource);
          return it != v.resources.end() && it->second.streaming && it->second.healthyCount() > 0;
        },
        kDeadline);
    if (!report_.check(registered, "rdma-device-plugin registered with the kubelet (classic "
                                   "mode) and streams ListAndWatch")) {
      report_.block(plugin_->logs());
      return false;
    }
    report_.block(
        formatTable({"PROGRAM", "PID", "ENDPOINT"},
                    {{"rdma-webhook", std::to_string(webhook_->pid()),
                      "https://127.0.0.1:" + std::to_string(port_) + "/mutate"},
                     {"rdma-device-plugin", std::to_string(plugin_->pid()),
                      kubelet_->view().resources.at(kResource).endpoint},
                     {"kubelet simulator", "(this process)", kubelet_->dir() + "/kubelet.sock"}},
                    kIndent));
    return true;
  }

  // 3. What rdmactl sees on the node.
  void nodeDevices() {
    report_.section("The node's RDMA devices and GIDs (rdmactl devices, rdmactl gids)");
    const std::string rdmactl = shellQuote(binary("rdmactl/rdmactl")) + " --sysfs-root " +
                                shellQuote(node_ + "/sys") + " --proc-root " +
                                shellQuote(node_ + "/proc") + " --dev-root " +
                                shellQuote(node_ + "/dev") + " --json ";
    auto devices_text = capture(rdmactl + "devices");
    auto gids_text = capture(rdmactl + "gids");
    if (!report_.check(devices_text.ok() && gids_text.ok(), "rdmactl answered")) {
      return;
    }
    report_.line("rdmactl --sysfs-root node/sys --proc-root node/proc --dev-root node/dev "
                 "--json devices (and gids):");
    const json devices = json::parse(*devices_text, nullptr, false);
    const json gids = json::parse(*gids_text, nullptr, false);
    if (!report_.check(devices.is_object() && gids.is_array(), "rdmactl --json is JSON")) {
      return;
    }
    // The RoCE v2 GID with an IPv4 address per port: the one RoCE traffic uses.
    std::map<std::string, std::string> v2_ipv4;
    for (const json& g : gids) {
      const std::string key = g.value("device", "") + "/" + std::to_string(g.value("port", 0));
      if (g.value("version", "") == "v2" && !g.value("ipv4", "").empty() && !v2_ipv4.count(key)) {
        v2_ipv4[key] = std::to_string(g.value("index", -1)) + "  " + g.value("ipv4", "");
      }
    }
    std::vector<std::vector<std::string>> rows;
    int hcas = 0;
    int active = 0;
    int data_with_gid = 0;
    std::string management;
    for (const json& d : devices.value("devices", json::array())) {
      ++hcas;
      const bool mgmt = d.value("management", false);
      if (mgmt) {
        management = d.value("name", "");
      }
      for (const json& p : d.value("ports", json::array())) {
        const std::string key = d.value("name", "") + "/" + std::to_string(p.value("port", 0));
        active += p.value("state", "") == "ACTIVE";
        data_with_gid += !mgmt && v2_ipv4.count(key);
        rows.push_back({d.value("name", ""), std::to_string(p.value("port", 0)),
                        p.value("netdev", ""), p.value("state", ""), p.value("link_layer", ""),
                        std::to_string(p.value("rate_gbps", 0)) + " Gb/s",
                        std::to_string(d.value("numa_node", -1)), d.value("pci_address", ""),
                        v2_ipv4.count(key) ? v2_ipv4[key] : "-",
                        mgmt ? "management (default route)" : "data"});
      }
    }
    report_.block(formatTable({"HCA", "PORT", "NETDEV", "STATE", "LINK", "RATE", "NUMA", "PCI",
                               "ROCEv2 GID  IPv4", "ROLE"},
                              rows, kIndent));
    report_.line(std::to_string(gids.size()) + " GID entries in all; GPUs: " +
                 std::to_string(devices.value("gpus", json::array()).size()));
    report_.check(hcas == 9 && active == 9, "9 HCAs, every port ACTIVE");
    report_.check(management == "mlx5_0", "mlx5_0 carries the default route: the management NIC");
    report_.check(data_with_gid == 8, "mlx5_1..mlx5_8 each have a RoCE v2 GID with an IPv4");
  }

  // 4. The simulator's view of ListAndWatch.
  void offeredResources() {
    report_.section("Resources offered to the kubelet (the simulator's ListAndWatch view)");
    const KubeletView view = kubelet_->view();
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, r] : view.resources) {
      std::string ids;
      for (size_t i = 0; i < r.devices.size() && i < 4; ++i) {
        ids += (i ? "," : "") + r.devices[i].id();
      }
      if (r.devices.size() > 4) {
        ids += ",...," + r.devices.back().id();
      }
      rows.push_back({name, std::to_string(r.devices.size()), std::to_string(r.healthyCount()), ids,
                      r.options.get_preferred_allocation_available() ? "yes" : "no",
                      fs::path(r.endpoint).filename().string()});
    }
    report_.block(
        formatTable({"RESOURCE", "DEVICES", "HEALTHY", "IDS", "PREFERRED-ALLOCATION", "SOCKET"},
                    rows, kIndent));
    report_.line("shared pool: any one ID grants every data NIC of the node (16 IDs per HCA)");
    const auto it = view.resources.find(kResource);
    report_.check(it != view.resources.end() && it->second.devices.size() == 128 &&
                      it->second.healthyCount() == 128,
                  "rdma/shared: 128 IDs, all Healthy (8 data NICs x 16)");
    report_.check(view.resources.count("rdma/hca") == 0,
                  "no rdma/hca: the node has no InfiniBand port");
    report_.check(view.rejections.empty(), "the kubelet rejected no registration");
  }

  // 5. The pods through the webhook, as the API server sends them.
  void admission() {
    report_.section("The PyTorchJob's pods through rdma-webhook (AdmissionReview over HTTPS)");
    auto c = client();
    int uid = 0;
    for (const DemoPod& p : kPods) {
      const json pod =
          json::parse(readTestFile(std::string(KUBE_RDMA_E2E_PODS) + "/" + p.file), nullptr, false);
      const std::string name = pod.is_object() ? pod["metadata"].value("name", p.file) : p.file;
      report_.line("");
      report_.line("pod " + name + "  (test/e2e/pods/" + p.file + ": " + p.mirrors + ")");
      if (!report_.check(pod.is_object(), p.file + " parses")) {
        continue;
      }
      auto reply = review(*c, pod, "demo-" + std::to_string(++uid));
      if (!report_.check(reply.ok(),
                         "AdmissionReview answered: uid echoed, allowed" +
                             (reply.ok() ? "" : std::string(": ") + reply.error().message))) {
        continue;
      }
      for (const std::string& w : reply->second) {
        report_.line("warning: " + w);
      }
      json patched;
      try {
        patched = pod.patch(reply->first);
      } catch (const json::exception& e) {
        report_.fail(std::string("the JSON Patch applies: ") + e.what());
        continue;
      }
      report_.check(reply->first.is_array() && !reply->first.empty(),
                    "a JSON Patch of " + std::to_string(reply->first.size()) +
                        " operations, applied with nlohmann::json::patch (RFC 6902)");
      for (const std::string& l :
           unifiedDiff(splitLines(pod.dump(2)), splitLines(patched.dump(2)), 1)) {
        report_.line("  " + l);
      }
      checkPatchedPod(patched);
      auto again = review(*c, patched, "demo-" + std::to_string(++uid));
      report_.check(again.ok() && again->first.empty(),
                    "the patched pod sent again (reinvocation) gets no patch");
      Admitted admitted;
      admitted.name = name;
      admitted.original = pod;
      admitted.patched = patched;
      pods_.push_back(std::move(admitted));
    }
    report_.check(pods_.size() == kPods.size(), "every pod admitted and patched");
  }

  void checkPatchedPod(const json& pod) {
    const json* c = rdmaContainer(pod);
    report_.check(c != nullptr, "the container asks for rdma/shared: 1");
    if (c == nullptr) {
      return;
    }
    const json caps = c->value("/securityContext/capabilities/add"_json_pointer, json::array());
    report_.check(std::find(caps.begin(), caps.end(), "IPC_LOCK") != caps.end(),
                  "IPC_LOCK added to the container's capabilities");
    std::string shm_volume;
    for (const json& m : c->value("volumeMounts", json::array())) {
      if (m.value("mountPath", "") == "/dev/shm") {
        shm_volume = m.value("name", "");
      }
    }
    bool memory = false;
    for (const json& v : pod["spec"].value("volumes", json::array())) {
      memory = memory || (v.value("name", "") == shm_volume &&
                          v.value("/emptyDir/medium"_json_pointer, "") == "Memory");
    }
    report_.check(!shm_volume.empty() && memory, "/dev/shm mounted from a memory emptyDir");
  }

  // POSTs one review; the patch (empty array when none) and the warnings.
  Result<std::pair<json, std::vector<std::string>>> review(httplib::SSLClient& c, const json& pod,
                                                           const std::string& uid) {
    const json body = {{"apiVersion", "admission.k8s.io/v1"},
                       {"kind", "AdmissionReview"},
                       {"request",
                        {{"uid", uid},
                         {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                         {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                         {"namespace", pod["metadata"].value("namespace", "default")},
                         {"operation", "CREATE"},
                         {"object", pod}}}};
    auto res = c.Post("/mutate?timeout=5s", body.dump(), "application/json");
    if (!res) {
      return makeError("transport error: " + httplib::to_string(res.error()));
    }
    if (res->status != 200) {
      return makeError("HTTP " + std::to_string(res->status) + ": " + res->body);
    }
    const json reply = json::parse(res->body, nullptr, false);
    const json response = reply.is_object() ? reply.value("response", json::object()) : json();
    if (!response.is_object() || response.value("uid", "") != uid ||
        response.value("allowed", false) != true) {
      return makeError("unexpected reply: " + res->body);
    }
    std::vector<std::string> warnings;
    for (const json& w : response.value("warnings", json::array())) {
      warnings.push_back(w.get<std::string>());
    }
    if (!response.contains("patch")) {
      return std::make_pair(json::array(), warnings);
    }
    if (response.value("patchType", "") != "JSONPatch") {
      return makeError("a patch without patchType JSONPatch");
    }
    auto decoded = base64Decode(response["patch"].get<std::string>());
    if (!decoded.ok()) {
      return decoded.error();
    }
    const json patch = json::parse(*decoded, nullptr, false);
    if (!patch.is_array()) {
      return makeError("the patch is not a JSON array");
    }
    return std::make_pair(patch, warnings);
  }

  // 6. The kubelet calls Allocate for each RDMA container, one shared ID each.
  void allocate() {
    report_.section("Allocate, as the kubelet calls it for each container after scheduling");
    const KubeletView view = kubelet_->view();
    const auto& devices = view.resources.at(kResource).devices;
    size_t next = 0;
    for (Admitted& p : pods_) {
      const std::string id = devices.at(next++ % devices.size()).id();
      auto answer = kubelet_->allocate(kResource, {id});
      if (!report_.check(answer.ok(), p.name + ": Allocate(" + kResource + ", [" + id + "])" +
                                          (answer.ok() ? "" : ": " + answer.error().message))) {
        continue;
      }
      p.allocation = *answer;
      for (const auto& [k, v] : answer->envs()) {
        p.node_env.emplace_back(k, v);
      }
      std::sort(p.node_env.begin(), p.node_env.end());
      for (const auto& m : answer->mounts()) {
        if (m.container_path() == "/etc/nccl.conf") {
          p.nccl_conf_path = m.host_path();
          p.nccl_conf = parseNcclConf(readTestFile(m.host_path()));
        }
      }
    }
    if (pods_.empty() || pods_.front().node_env.empty()) {
      report_.fail("an Allocate answer to show");
      return;
    }
    const Admitted& first = pods_.front();
    const auto& a = first.allocation;
    report_.line("answer for " + first.name + ":");
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : a.devices()) {
      rows.push_back({"device", d.container_path(), d.host_path(), d.permissions()});
    }
    for (const auto& m : a.mounts()) {
      rows.push_back({"mount", m.container_path(), m.host_path(), m.read_only() ? "ro" : "rw"});
    }
    report_.block(formatTable({"KIND", "CONTAINER PATH", "HOST PATH", "ACCESS"}, rows, kIndent));
    std::vector<std::vector<std::string>> envs;
    for (const auto& [k, v] : first.node_env) {
      envs.push_back({k, v});
    }
    report_.block(formatTable({"ENV", "VALUE"}, envs, kIndent));
    report_.line("nccl.conf (" + std::to_string(first.nccl_conf.size()) +
                 " lines, the same values for processes that do not inherit the environment)");

    std::set<std::string> nodes;
    for (const auto& d : a.devices()) {
      nodes.insert(d.container_path());
    }
    const bool has_uverbs = std::count_if(nodes.begin(), nodes.end(), [](const std::string& n) {
                              return n.rfind("/dev/infiniband/uverbs", 0) == 0;
                            }) == 8;
    report_.check(has_uverbs && nodes.count("/dev/infiniband/rdma_cm") == 1,
                  "8 uverbs device nodes (mlx5_1..mlx5_8, not the management NIC) and rdma_cm");
    const auto hca = a.envs().find("NCCL_IB_HCA");
    report_.check(hca != a.envs().end() && hca->second == kDataNics,
                  "NCCL_IB_HCA=" + kDataNics + " (exact names, ACTIVE ports)");
    bool conf_mounted = false;
    for (const auto& m : a.mounts()) {
      conf_mounted = conf_mounted || (m.container_path() == "/etc/nccl.conf" && m.read_only());
    }
    report_.check(conf_mounted, "nccl.conf mounted read-only at /etc/nccl.conf");
    NcclEnv node_nccl;
    for (const auto& kv : first.node_env) {
      if (kv.first.rfind("NCCL_", 0) == 0) {
        node_nccl.push_back(kv);
      }
    }
    NcclEnv conf_nccl = first.nccl_conf;
    std::sort(conf_nccl.begin(), conf_nccl.end());
    std::erase_if(conf_nccl, [](const auto& kv) { return kv.first.rfind("NCCL_", 0) != 0; });
    report_.check(!conf_nccl.empty() && conf_nccl == node_nccl,
                  "nccl.conf holds the same NCCL_* values as the Allocate envs");
    showNcclReading(report_, tmp_.path() + "/nccl-plugin", first.nccl_conf_path);
    bool all = true;
    for (const Admitted& p : pods_) {
      all = all && p.node_env == first.node_env;
    }
    report_.check(all && pods_.size() == kPods.size(),
                  "every container got the same answer (a shared pool grants all its NICs)");
  }

  // 7. Each container's final environment and who set each NCCL_* value.
  void environment() {
    report_.section("Each RDMA container's final NCCL environment, and who set each value");
    report_.line("runtime order: Allocate envs (node), then the pod spec (user, then policy "
                 "entries), later wins;");
    report_.line("NCCL then reads nccl.conf without overwriting.");
    for (const Admitted& p : pods_) {
      const json* original = rdmaContainer(p.original);
      const json* patched = rdmaContainer(p.patched);
      if (patched == nullptr) {
        report_.fail(p.name + ": no RDMA container");
        continue;
      }
      // The shorthand pod's container asks for RDMA only once patched.
      const json& before = original != nullptr ? *original : p.original["spec"]["containers"][0];
      const auto rows =
          finalEnvironment(podEnv(before), podEnv(*patched), p.node_env, p.nccl_conf, "NCCL_");
      std::vector<std::vector<std::string>> table;
      table.reserve(rows.size());
      for (const EnvOrigin& e : rows) {
        table.push_back({e.name, e.value, e.source, shadowedNote(e)});
      }
      report_.line("");
      report_.line("pod " + p.name + ", container " + patched->value("name", ""));
      report_.block(formatTable({"NAME", "VALUE", "FROM", "NOTES"}, table, kIndent));
      auto value = [&](const std::string& name) -> std::pair<std::string, std::string> {
        for (const EnvOrigin& e : rows) {
          if (e.name == name) {
            return {e.value, e.source};
          }
        }
        return {"", ""};
      };
      const NcclEnv user = podEnv(before);
      const bool user_hca = std::any_of(user.begin(), user.end(),
                                        [](const auto& kv) { return kv.first == "NCCL_IB_HCA"; });
      if (user_hca) {
        report_.check(value("NCCL_IB_HCA") ==
                          std::make_pair(std::string("=mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1"),
                                         std::string("user")),
                      "the user's NCCL_IB_HCA wins over the node's (and nccl.conf's) eight NICs");
      } else {
        report_.check(value("NCCL_IB_HCA") == std::make_pair(kDataNics, std::string("node")),
                      "NCCL_IB_HCA from the node: the eight data NICs");
      }
      report_.check(value("NCCL_SOCKET_IFNAME") ==
                        std::make_pair(std::string("eth0"), std::string("policy")),
                    "NCCL_SOCKET_IFNAME=eth0 from the policy (pod network)");
      report_.check(value("NCCL_IB_TIMEOUT").second == "policy" &&
                        value("NCCL_IB_QPS_PER_CONNECTION").second == "policy",
                    "NCCL_IB_TIMEOUT and NCCL_IB_QPS_PER_CONNECTION from the policy");
    }
    report_.check(pods_.size() == kPods.size(), "every pod's container shown");
  }

  void stopPrograms() {
    stopProgram(plugin_, g_children[1], "rdma-device-plugin");
    kubelet_.reset();
    stopProgram(webhook_, g_children[0], "rdma-webhook");
  }

  // An API server's client: it dials the Service name (mapped to loopback here) and verifies
  // the serving certificate against the CA, as with the caBundle.
  std::unique_ptr<httplib::SSLClient> client() const {
    auto c = std::make_unique<httplib::SSLClient>(kServiceName, port_);
    c->set_hostname_addr_map({{kServiceName, "127.0.0.1"}});
    c->set_ca_cert_path(certs_ + "/ca.crt");
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(5, 0);
    return c;
  }

  struct Admitted {
    std::string name;
    json original;
    json patched;
    v1beta1::ContainerAllocateResponse allocation;
    NcclEnv node_env;           // Allocate envs, sorted by name
    std::string nccl_conf_path; // on the host
    NcclEnv nccl_conf;
  };

  const std::string binary_dir_;
  const std::string source_dir_;
  Report report_;
  TempDir tmp_;
  std::string certs_;
  std::string node_;
  std::string state_dir_;
  int port_ = 0;
  PluginProcessPtr webhook_;
  PluginProcessPtr plugin_;
  std::unique_ptr<KubeletSimulator> kubelet_;
  std::vector<Admitted> pods_;
};

void onInterrupt(int sig) {
  for (auto& child : g_children) {
    if (const pid_t pid = child.load(); pid > 0) {
      ::kill(pid, SIGKILL);
    }
  }
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_interrupt_pipe[1], &byte, 1);
}

// Ctrl-C, SIGTERM or SIGHUP: stop the children, remove the temp dir, exit 130.
void watchInterrupts() {
  if (::pipe2(g_interrupt_pipe, O_CLOEXEC) != 0) {
    return;
  }
  std::thread([] {
    char sig = 0;
    while (::read(g_interrupt_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    std::error_code ignored;
    if (!g_temp_dir.empty()) {
      fs::remove_all(g_temp_dir, ignored);
    }
    std::cout << "\nkube-rdma demo: interrupted (signal " << int(sig)
              << "), children stopped, temp dir removed" << std::endl;
    ::_exit(130);
  }).detach();
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    ::sigaction(sig, &action, nullptr);
  }
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  if (argc > 1) {
    std::cerr << "usage: " << argv[0]
              << "\n  runs the kube-rdma demo: no arguments; stdout shows each step, the last "
                 "line is the verdict\n";
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN); // a server closing a TLS connection must not kill the demo
  kube_rdma::watchInterrupts();
  const bool colour = ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  kube_rdma::Demo demo(KUBE_RDMA_BINARY_DIR, KUBE_RDMA_SOURCE_DIR, colour);
  return demo.run();
}
