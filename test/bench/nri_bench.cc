// What the NRI plugin adds to each container's creation: the runtime calls plugins one container
// at a time, so this is on the path of every container on the node (docs/nri.md). Each case is
// the whole NriSession answer to one CreateContainer (decode, decide, encode), next to references
// measured in the same run: the answer for a container that is not kube-rdma's (what every other
// container pays), and the bare open/read/close of the GID files the worst case must read. Run:
//   build/test/bench/nri_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nri/nccl_env_adjuster.h"
#include "nri/nri_session.h"
#include "ttrpc/request.pb.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  const char* env = std::getenv("KUBE_RDMA_FIXTURES");
  return std::string(env != nullptr ? env : KUBE_RDMA_FIXTURES) + "/" + name;
}

// A host /proc with the sandbox processes 101 (the pod-network fixture's podA: its own GIDs on
// the roce-pod-network ports) and 102 (a pod on the cluster network alone), and the node's
// nccl.conf of each case.
struct Host {
  Host() : root(fs::temp_directory_path() / "nri-bench") {
    fs::remove_all(root);
    fs::create_directories(root / "proc");
    fs::create_directory_symlink(fixture("roce-pod-network") + "/pods/podA/proc",
                                 root / "proc" / "101");
    fs::create_directory_symlink(fixture("roce-pod-network") + "/pods/podbridge/proc",
                                 root / "proc" / "102");
    std::ofstream(root / "two-rails.conf") << "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\n";
    std::string a100 = "NCCL_IB_HCA==";
    for (int i = 1; i <= 8; ++i) {
      a100 += (i > 1 ? ",mlx5_" : "mlx5_") + std::to_string(i) + ":1";
    }
    std::ofstream(root / "a100.conf") << a100 << "\n";
  }
  ~Host() { fs::remove_all(root); }
  fs::path root;
};

std::string createContainer(const Host& host, uint32_t pid, const std::string& conf,
                            bool carries_hook) {
  nriapi::CreateContainerRequest request;
  request.mutable_pod()->set_namespace_("training");
  request.mutable_pod()->set_name("worker-0");
  request.mutable_pod()->set_pid(pid);
  auto* container = request.mutable_container();
  container->set_id("5f2c0a");
  for (const char* env : {"PATH=/usr/bin", "NCCL_IB_HCA==mlx5_1:1", "HOME=/root"}) {
    container->add_env(env);
  }
  auto* mount = container->add_mounts();
  mount->set_destination("/etc/nccl.conf");
  mount->set_source((host.root / conf).string());
  if (carries_hook) {
    auto* hook = container->mutable_hooks()->add_create_container();
    hook->set_path("/var/lib/kube-rdma/bin/kube-rdma-nccl-hook");
    hook->add_args("kube-rdma-nccl-hook");
  }
  container->mutable_linux()->add_namespaces()->set_type("network");
  ttrpc::Request call;
  call.set_service("nri.pkg.api.v1alpha1.Plugin");
  call.set_method("CreateContainer");
  call.set_payload(request.SerializeAsString());
  return encodeTtrpcFrame(
      {MuxConn::kPluginService, 7, TtrpcType::kRequest, 0, call.SerializeAsString()});
}

void answer(benchmark::State& state, const std::string& sysfs, uint32_t pid,
            const std::string& conf, bool carries_hook) {
  const Host host;
  std::ostringstream sink;
  Logger log(sink);
  MetricsRegistry metrics;
  NcclEnvAdjuster adjuster({fixture(sysfs) + "/sys", (host.root / "proc").string()}, metrics, log);
  NriSession session("kube-rdma", "90", std::ref(adjuster));
  const std::string call = createContainer(host, pid, conf, carries_hook);
  for (auto _ : state) {
    auto reply = session.receive(call);
    benchmark::DoNotOptimize(reply);
    sink.str("");
  }
}

void BM_NotKubeRdmas(benchmark::State& state) {
  answer(state, "roce-pod-network", 101, "two-rails.conf", false);
}
void BM_OwnGidTwoPorts(benchmark::State& state) {
  answer(state, "roce-pod-network", 101, "two-rails.conf", true);
}
void BM_ClusterNetworkOnlyEightPorts(benchmark::State& state) {
  answer(state, "a100-roce-pod-rails", 102, "a100.conf", true);
}

// The floor of the worst case: open/read/close of every gids/<i> of the A100's eight data ports.
void BM_ReadEightGidTables(benchmark::State& state) {
  std::vector<std::string> files;
  for (int device = 1; device <= 8; ++device) {
    const std::string port = fixture("a100-roce-pod-rails") + "/sys/class/infiniband/mlx5_" +
                             std::to_string(device) + "/ports/1/gids";
    for (const auto& entry : fs::directory_iterator(port)) {
      files.push_back(entry.path().string());
    }
  }
  char buffer[64];
  for (auto _ : state) {
    for (const auto& file : files) {
      const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
      benchmark::DoNotOptimize(read(fd, buffer, sizeof buffer));
      close(fd);
    }
  }
  state.counters["files"] = static_cast<double>(files.size());
}

BENCHMARK(BM_NotKubeRdmas);
BENCHMARK(BM_OwnGidTwoPorts);
BENCHMARK(BM_ClusterNetworkOnlyEightPorts);
BENCHMARK(BM_ReadEightGidTables);

} // namespace
} // namespace kube_rdma

BENCHMARK_MAIN();
