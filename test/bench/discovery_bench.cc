// Discovery speed over the generated fixtures, each next to a reference measured in the same
// run: the bare open/read/close of the files discovery has to read (the floor no sysfs reader
// can go below). KUBE_RDMA_FIXTURES in the environment points it at another copy of the
// fixtures (e.g. on tmpfs, which like the kernel's sysfs is memory-backed). Run:
//   build/test/bench/discovery_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

DiscoveryRoots roots(const std::string& name) {
  const char* env = std::getenv("KUBE_RDMA_FIXTURES");
  const std::string base = std::string(env != nullptr ? env : KUBE_RDMA_FIXTURES) + "/" + name;
  return {base + "/sys", base + "/proc"};
}

// Every per-port file discovery reads for GIDs (gids/<i> of the whole table, and types/ndevs of
// the used entries), every port's state, and the PCI attributes of every RDMA device and PCI
// function, as absolute paths.
std::vector<std::string> filesDiscoveryReads(const std::string& name) {
  const auto topo = discoverFromSysfs(roots(name));
  const std::string sys = roots(name).sysfs_root;
  std::vector<std::string> files;
  for (const auto& d : topo.devices) {
    const std::string dev = sys + "/class/infiniband/" + d.name;
    for (const char* a : {"node_guid", "fw_ver", "hca_type", "board_id", "device/vendor",
                          "device/device", "device/numa_node", "device/local_cpulist"}) {
      files.push_back(dev + "/" + a);
    }
    for (const auto& p : d.ports) {
      const std::string port = dev + "/ports/" + std::to_string(p.number);
      for (const char* a : {"state", "phys_state", "link_layer", "rate", "lid"}) {
        files.push_back(port + "/" + a);
      }
      for (uint32_t i = 0; i < p.gid_table_len; ++i) {
        files.push_back(port + "/gids/" + std::to_string(i));
      }
      for (const auto& g : p.gids) {
        files.push_back(port + "/gid_attrs/types/" + std::to_string(g.index));
        files.push_back(port + "/gid_attrs/ndevs/" + std::to_string(g.index));
      }
    }
  }
  for (const auto& entry : fs::directory_iterator(sys + "/bus/pci/devices")) {
    files.push_back(entry.path().string() + "/vendor");
  }
  return files;
}

std::vector<std::string> stateFiles(const std::string& name) {
  const auto topo = discoverFromSysfs(roots(name));
  std::vector<std::string> files;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      files.push_back(roots(name).sysfs_root + "/class/infiniband/" + d.name + "/ports/" +
                      std::to_string(p.number) + "/state");
    }
  }
  return files;
}

// The reference: open, read, close each file; errors (EISDIR for EINVAL entries) included.
void readAll(benchmark::State& state, const std::vector<std::string>& files) {
  char buf[256];
  for (auto _ : state) {
    size_t bytes = 0;
    for (const auto& f : files) {
      const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        bytes += n > 0 ? static_cast<size_t>(n) : 0;
        ::close(fd);
      }
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["files"] = static_cast<double>(files.size());
}

// Discovery of one fixture, reading as much of the GID tables as `scan` says. Time is wall time
// and CPU the whole process's, here and in the references.
void BM_Discover(benchmark::State& state, const char* fixture, const GidScan& scan) {
  const auto r = roots(fixture);
  for (auto _ : state) {
    auto topo = discoverFromSysfs(r, scan);
    benchmark::DoNotOptimize(topo.devices.data());
  }
}

void wallAndProcessTime(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMicrosecond)->UseRealTime()->MeasureProcessCPUTime();
}

const GidScan kWholeTables{GidTables::kRead, {}};
// What the plugin reads in the "agreed" gidIndex mode with NCCL's default rule (RoCE v2, IPv4).
const GidScan kUntilSelected{GidTables::kUntilSelected, {GidSelectionPolicy{}}};
// What discoverNode reads from sysfs when libibverbs supplies the GID tables.
const GidScan kFirstGidOnly{GidTables::kFirstOnly, {}};

BENCHMARK_CAPTURE(BM_Discover, A100, "a100-roce", kWholeTables)->Apply(wallAndProcessTime);
BENCHMARK_CAPTURE(BM_Discover, A100UntilSelected, "a100-roce", kUntilSelected)
    ->Apply(wallAndProcessTime);
BENCHMARK_CAPTURE(BM_Discover, A100FirstGidOnly, "a100-roce", kFirstGidOnly)
    ->Apply(wallAndProcessTime);

void BM_ReferenceReadA100Files(benchmark::State& state) {
  readAll(state, filesDiscoveryReads("a100-roce"));
}
BENCHMARK(BM_ReferenceReadA100Files)->Apply(wallAndProcessTime);

BENCHMARK_CAPTURE(BM_Discover, Large16x2, "large-16x2", kWholeTables)->Apply(wallAndProcessTime);
BENCHMARK_CAPTURE(BM_Discover, Large16x2UntilSelected, "large-16x2", kUntilSelected)
    ->Apply(wallAndProcessTime);

void BM_ReferenceReadLarge16x2Files(benchmark::State& state) {
  readAll(state, filesDiscoveryReads("large-16x2"));
}
BENCHMARK(BM_ReferenceReadLarge16x2Files)->Apply(wallAndProcessTime);

// What the health watcher does each tick: list the devices, re-read the held state files.
void BM_HealthTickA100(benchmark::State& state) {
  const auto r = roots("a100-roce");
  const auto known = discoverFromSysfs(r);
  PortStateFiles files(r.sysfs_root);
  for (auto _ : state) {
    auto samples = files.read(known, listRdmaDeviceNames(r.sysfs_root));
    benchmark::DoNotOptimize(samples.data());
  }
}
BENCHMARK(BM_HealthTickA100)->Apply(wallAndProcessTime);

void BM_ReferenceReadA100StateFiles(benchmark::State& state) {
  readAll(state, stateFiles("a100-roce"));
}
BENCHMARK(BM_ReferenceReadA100StateFiles)->Apply(wallAndProcessTime);

} // namespace
} // namespace kube_rdma

BENCHMARK_MAIN();
