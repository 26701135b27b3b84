// dra_bench: rdma-dra-driver's speed, each figure beside a reference measured in the same run.
// Not a test: it prints figures for BENCHMARKS.md.
//
//   dra_bench [--rounds N] [--calls N] [--changes N]
//
// 1. NodePrepareResources of one claim (two RoCE NICs of the A100 fixture) through the v1 DRA
//    gRPC API of the real driver, which GETs the claim from the API-server simulator over HTTPS
//    (keep-alive) and writes its CDI spec, nccl.conf and checkpoint on tmpfs (/dev/shm); an
//    untimed NodeUnprepareResources follows each, so every prepare writes its files. References,
//    interleaved call by call in the same rounds: a bare gRPC round trip on a unix socket
//    (plugin_bench --echo-server) and a bare HTTPS GET of the same claim from the simulator
//    through kubeclient's ApiClient (keep-alive, the driver's token), the driver's own read of
//    it. Per round p50/p99; then the median over the rounds of each.
// 2. The published slice after a port of a copy of the fixture goes DOWN (or back ACTIVE) until a
//    LIST shows the new state, and after someone deletes the slice until it is back.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "dra/v1/api.grpc.pb.h"
#include "test/dra/dra_test_support.h"
#include "test/apiserver/simulated_api.h"
#include "test/plugin/bench_support.h"
#include "test/plugin/plugin_process.h"

namespace kube_rdma {
namespace {

using bench::Clock;
using bench::micros;
using bench::stats;
using nlohmann::json;
namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
constexpr auto kDeadline = std::chrono::seconds(10);
constexpr const char* kClaimPath =
    "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-0-rdma-x7k2p";
// mlx5_3's port: the one flipped.
constexpr const char* kFlippedDevice = "pci-0000-33-00-0-p1";

template <class F> bool waitFor(F condition, std::chrono::milliseconds poll) {
  const auto end = Clock::now() + kDeadline;
  while (Clock::now() < end) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(poll);
  }
  return false;
}

template <class Request> void addClaim(Request& request, const std::string& uid) {
  auto* claim = request.add_claims();
  claim->set_namespace_("ml");
  claim->set_name("train-0-rdma-x7k2p");
  claim->set_uid(uid);
}

// One NodePrepareResources call for the claim: its round trip in microseconds, or nothing when
// the call or the claim failed.
std::optional<double> timedPrepare(v1::DRAPlugin::Stub& stub, const std::string& uid) {
  v1::NodePrepareResourcesRequest request;
  addClaim(request, uid);
  v1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  const auto t0 = Clock::now();
  if (!stub.NodePrepareResources(&context, request, &response).ok()) {
    return std::nullopt;
  }
  const double us = micros(Clock::now() - t0);
  if (response.claims().at(uid).error() != "") {
    std::cerr << "prepare failed: " << response.claims().at(uid).error() << "\n";
    return std::nullopt;
  }
  return us;
}

bool unprepare(v1::DRAPlugin::Stub& stub, const std::string& uid) {
  v1::NodeUnprepareResourcesRequest request;
  addClaim(request, uid);
  v1::NodeUnprepareResourcesResponse response;
  grpc::ClientContext context;
  return stub.NodeUnprepareResources(&context, request, &response).ok() &&
         response.claims().at(uid).error().empty();
}

// One GET of the claim through kubeclient's ApiClient (keep-alive), as the driver reads it.
std::optional<double> timedGet(ApiClient& api) {
  const auto t0 = Clock::now();
  if (!api.get(kClaimPath).ok()) {
    return std::nullopt;
  }
  return micros(Clock::now() - t0);
}

std::vector<json> nodeSlices(ApiClient& api) {
  ApiResult<ObjectList> listed = api.list("/apis/resource.k8s.io/v1/resourceslices",
                                          {std::string("spec.nodeName=") + kTestNode});
  return listed.ok() ? listed->items : std::vector<json>{};
}

std::string publishedState(ApiClient& api) {
  for (const json& slice : nodeSlices(api)) {
    for (const json& device : slice["spec"]["devices"]) {
      if (device["name"] == kFlippedDevice) {
        return device["attributes"]["state"]["string"];
      }
    }
  }
  return "";
}

void printRow(const char* what, const std::vector<double>& p50s, const std::vector<double>& p99s) {
  std::printf("%s: p50 %.0f us, p99 %.0f us (medians over %zu rounds)\n", what, stats(p50s).p50,
              stats(p99s).p50, p50s.size());
}

int run(int rounds, int calls, int changes) {
  // The driver's files on tmpfs, as on a node (/var/run); the sockets with them.
  if (::access("/dev/shm", W_OK) == 0) {
    ::setenv("TMPDIR", "/dev/shm", 1);
  }
  TempDir dir;
  SimulatedApi api;
  if (std::string failed = api.start(); !failed.empty()) {
    std::cerr << "API-server simulator: " << failed << "\n";
    return 1;
  }
  api.simulator().put("nodes", {{"metadata", {{"name", kTestNode}}}});
  const json claim =
      api.simulator().put("resourceclaims", json::parse(readTestData("claim-two-nics.json")));
  const std::string uid = claim["metadata"]["uid"];
  const std::string node = dir.path() + "/node";
  const std::string copy = "cp -a " + std::string(KUBE_RDMA_FIXTURES) + "/a100-roce " + node;
  if (std::system(copy.c_str()) != 0) {
    std::cerr << copy << " failed\n";
    return 1;
  }
  auto driver = PluginProcess::start(
      KUBE_RDMA_DRA_DRIVER_BINARY,
      {"--node-name", kTestNode, "--kubeconfig", api.writeKubeconfig(), "--sysfs-root",
       node + "/sys", "--proc-root", node + "/proc", "--dev-root", node + "/dev",
       "--plugin-registry-dir", dir.path() + "/registry", "--plugin-dir", dir.path() + "/dra",
       "--cdi-dir", dir.path() + "/cdi", "--state-dir", dir.path() + "/state"},
      dir.path() + "/driver.log");
  const std::string echo_socket = dir.path() + "/echo.sock";
  auto echo = PluginProcess::start(KUBE_RDMA_PLUGIN_BENCH_BINARY, {"--echo-server", echo_socket},
                                   "/dev/null");
  if (!driver || !echo ||
      !waitFor([&] { return publishedState(api.api()) == "ACTIVE"; },
               std::chrono::milliseconds(10)) ||
      !waitFor([&] { return std::filesystem::exists(echo_socket); },
               std::chrono::milliseconds(10))) {
    std::cerr << "the driver or the echo server did not start\n"
              << (driver ? (*driver)->logs() : driver.error().message) << "\n";
    return 1;
  }
  auto dra = v1::DRAPlugin::NewStub(grpc::CreateChannel("unix:" + dir.path() + "/dra/dra.sock",
                                                        grpc::InsecureChannelCredentials()));
  auto echo_stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + echo_socket, grpc::InsecureChannelCredentials()));
  // 1. NodePrepareResources beside the two references, call by call.
  std::vector<double> prepare_p50, prepare_p99, echo_p50, echo_p99, get_p50, get_p99;
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> prepare_us, echo_us, get_us;
    for (int i = 0; i < calls; ++i) {
      const auto prepared = timedPrepare(*dra, uid);
      const auto echoed = bench::timedAllocate(*echo_stub, "0");
      const auto got = timedGet(api.api());

      if (!prepared || !echoed || !got || !unprepare(*dra, uid)) {
        std::cerr << "a call failed\n" << (*driver)->logs() << "\n";
        return 1;
      }
      prepare_us.push_back(*prepared);
      echo_us.push_back(*echoed);
      get_us.push_back(*got);
    }
    const auto pr = stats(prepare_us), ec = stats(echo_us), ge = stats(get_us);
    std::printf("round %d, %d calls: NodePrepareResources p50 %.0f us p99 %.0f us | gRPC echo "
                "p50 %.0f us p99 %.0f us | HTTPS GET p50 %.0f us p99 %.0f us\n",
                round + 1, calls, pr.p50, pr.p99, ec.p50, ec.p99, ge.p50, ge.p99);
    prepare_p50.push_back(pr.p50);
    prepare_p99.push_back(pr.p99);
    echo_p50.push_back(ec.p50);
    echo_p99.push_back(ec.p99);
    get_p50.push_back(ge.p50);
    get_p99.push_back(ge.p99);
  }
  printRow("NodePrepareResources (claim GET over HTTPS included)", prepare_p50, prepare_p99);
  printRow("reference: bare gRPC echo on a unix socket", echo_p50, echo_p99);
  printRow("reference: bare HTTPS GET of the claim", get_p50, get_p99);

  // 2. Slice republish after a port change and after a deletion.
  std::vector<double> port_ms, restore_ms;
  const std::string state_file = node + "/sys/class/infiniband/mlx5_3/ports/1/state";
  for (int i = 0; i < changes; ++i) {
    const bool down = i % 2 == 0;
    std::ofstream(state_file) << (down ? "1: DOWN\n" : "4: ACTIVE\n");
    const auto t0 = Clock::now();
    if (!waitFor([&] { return publishedState(api.api()) == (down ? "DOWN" : "ACTIVE"); },
                 std::chrono::milliseconds(2))) {
      std::cerr << "the port change never reached the slice\n" << (*driver)->logs() << "\n";
      return 1;
    }
    port_ms.push_back(micros(Clock::now() - t0) / 1000);
  }
  for (int i = 0; i < changes; ++i) {
    const std::vector<json> slices = nodeSlices(api.api());
    if (slices.size() != 1 ||
        !api.simulator().remove("resourceslices", "", slices[0]["metadata"]["name"])) {
      std::cerr << "not exactly one slice to delete\n";
      return 1;
    }
    const auto t0 = Clock::now();
    if (!waitFor([&] { return nodeSlices(api.api()).size() == 1; }, std::chrono::milliseconds(2))) {
      std::cerr << "the slice never came back\n" << (*driver)->logs() << "\n";
      return 1;
    }
    restore_ms.push_back(micros(Clock::now() - t0) / 1000);
  }
  const auto po = stats(port_ms), re = stats(restore_ms);
  std::printf("port state change until the slice shows it, %d changes: median %.0f ms, max %.0f "
              "ms\n",
              changes, po.p50, po.max);
  std::printf("slice deleted until it is back, %d deletions: median %.0f ms, max %.0f ms\n",
              changes, re.p50, re.max);
  (void)(*echo)->terminate(kDeadline);
  (void)(*driver)->terminate(kDeadline);
  return 0;
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int rounds = 5, calls = 200, changes = 10;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const int value = std::stoi(args[i + 1]);
    if (args[i] == "--rounds") {
      rounds = value;
    } else if (args[i] == "--calls") {
      calls = value;
    } else if (args[i] == "--changes") {
      changes = value;
    } else {
      std::cerr << "usage: dra_bench [--rounds N] [--calls N] [--changes N]\n";
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  return kube_rdma::run(rounds, calls, changes);
}
