// plugin_bench: the device plugin's speed and footprint, each beside a reference measured in the
// same run. Not a test: it prints figures for BENCHMARKS.md.
//
//   plugin_bench [--idle-seconds N] [--rounds N] [--calls N] [--plugin BINARY]
//
// 1. start until registered: fork/exec of the plugin until the simulated kubelet has both pools
//    registered with their first list (kubelet.sock already there); reference: fork/exec of
//    /bin/true until it exits.
// 2. Allocate round trip over the unix socket, through the kubelet simulator's channel (which
//    carries the ListAndWatch stream) and on a channel of its own; reference: a trivial gRPC echo
//    (this program in --echo-server mode) over the same kind of socket, called like the latter.
// 3. port state change and kubelet restart until the kubelet sees them.
// 4. idle RSS (VmRSS) and idle CPU (utime+stime, and schedstat) of the plugin and of the echo
//    server; SIGTERM until the plugin exited 0.
//
//   plugin_bench --echo-lab [--rounds N] [--calls N]
//
// The echo server in each gRPC server configuration of kEchoConfigs, one process each, called
// in turn (rotating) by one client (a default channel per server, as the kubelet): Allocate p50/p99
// per round and the median over rounds of each configuration's p50 over the sync one's.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "plugin/kubelet_registrar.h"
#include "test/plugin/bench_support.h"
#include "test/plugin/kubelet_simulator.h"
#include "test/plugin/plugin_process.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;
using bench::Clock;
using bench::micros;
using bench::stats;
using bench::timedAllocate;
constexpr auto kDeadline = std::chrono::seconds(10);
constexpr const char* kConfig = R"({"version": "v1", "pools": [
  {"resourceName": "example.com/hca", "mode": "exclusive",
   "selector": {"deviceNames": ["mlx5_[1-4]"]}},
  {"resourceName": "example.com/shared", "selector": {"deviceNames": ["mlx5_[5-8]"]}}]})";

// The trivial service of the reference: every call answers at once.
class EchoService : public v1beta1::DevicePlugin::Service {
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    return grpc::Status::OK;
  }
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest*,
                        v1beta1::AllocateResponse* out) override {
    out->add_container_responses();
    return grpc::Status::OK;
  }
};

// The same service on gRPC's callback API: handlers run on gRPC's own threads.
class CallbackEchoService final : public v1beta1::DevicePlugin::CallbackService {
  grpc::ServerUnaryReactor* GetDevicePluginOptions(grpc::CallbackServerContext* context,
                                                   const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* context,
                                     const v1beta1::AllocateRequest*,
                                     v1beta1::AllocateResponse* out) override {
    out->add_container_responses();
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// The same service on gRPC's async API: one completion queue, drained by the calling thread,
// which answers each call inline (no hand-off to a handler thread).
using AsyncAllocateEchoService = v1beta1::DevicePlugin::WithAsyncMethod_Allocate<EchoService>;
class AsyncEchoCall {
public:
  AsyncEchoCall(AsyncAllocateEchoService& service, grpc::ServerCompletionQueue& cq)
      : service_(service), cq_(cq) {
    service_.RequestAllocate(&context_, &request_, &writer_, &cq_, &cq_, this);
  }
  // One event of this call: a request arrived (answer it, wait for the next) or the answer left.
  void proceed() {
    if (answered_) {
      delete this;
      return;
    }
    new AsyncEchoCall(service_, cq_);
    v1beta1::AllocateResponse out;
    out.add_container_responses();
    answered_ = true;
    writer_.Finish(out, grpc::Status::OK, this);
  }

private:
  AsyncAllocateEchoService& service_;
  grpc::ServerCompletionQueue& cq_;
  grpc::ServerContext context_;
  v1beta1::AllocateRequest request_;
  grpc::ServerAsyncResponseWriter<v1beta1::AllocateResponse> writer_{&context_};
  bool answered_ = false;
};

// "sync" is the plugin's own set-up (plugin/grpc_socket_server.cc) and the reference of the
// plugin benchmark; the others are what --echo-lab compares it with.
constexpr const char* kEchoConfigs[] = {"sync", "callback", "async", "sync-minimal-stack",
                                        "sync-no-bdp"};

int runEchoServer(const std::string& socket, const std::string& config) {
  EchoService service;
  CallbackEchoService callback_service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  if (config == "sync-minimal-stack") {
    builder.AddChannelArgument(GRPC_ARG_MINIMAL_STACK, 1);
  } else if (config == "sync-no-bdp") {
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  } else if (config != "sync" && config != "callback" && config != "async") {
    std::cerr << "unknown echo configuration " << config << "\n";
    return 2;
  }
  if (config == "async") {
    // Allocate only (the lab calls nothing else); the other methods stay synchronous.
    AsyncAllocateEchoService async_service;
    builder.RegisterService(&async_service);
    auto cq = builder.AddCompletionQueue();
    auto server = builder.BuildAndStart();
    if (!server) {
      return 1;
    }
    new AsyncEchoCall(async_service, *cq);
    void* tag = nullptr;
    bool ok = false;
    while (cq->Next(&tag, &ok)) { // until SIGTERM kills the process
      static_cast<AsyncEchoCall*>(tag)->proceed();
    }
    return 0;
  }
  if (config == "callback") {
    builder.RegisterService(&callback_service);
  } else {
    builder.RegisterService(&service);
  }
  auto server = builder.BuildAndStart();
  if (!server) {
    return 1;
  }
  server->Wait(); // until SIGTERM kills the process
  return 0;
}

long vmRssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

// utime + stime in clock ticks (fields 14 and 15 of /proc/<pid>/stat).
long cpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) {
      utime = std::stol(f);
    } else if (i == 15) {
      stime = std::stol(f);
    }
  }
  return utime + stime;
}

// Nanoseconds on CPU, summed over the process's threads (/proc/<pid>/task/*/schedstat, first
// field): the same quantity as utime+stime, without its 10 ms tick.
double cpuSeconds(pid_t pid) {
  double total = 0;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(task.path() / "schedstat");
    double ns = 0;
    in >> ns;
    total += ns / 1e9;
  }
  return total;
}

bool bothRegistered(const KubeletView& v) {
  for (const char* name : {"example.com/hca", "example.com/shared"}) {
    auto it = v.resources.find(name);
    if (it == v.resources.end() || it->second.registered_generation != v.generation ||
        it->second.lists_received == 0 || !it->second.streaming) {
      return false;
    }
  }
  return true;
}

struct Setup {
  TempDir tmp;
  std::string node;
  std::string kubelet_dir;
  std::string config;
  std::vector<std::string> args() const {
    // --metrics-address as the DaemonSet runs it: the listener is part of the idle footprint.
    return {"--sysfs-root",
            node + "/sys",
            "--proc-root",
            node + "/proc",
            "--dev-root",
            node + "/dev",
            "--device-plugin-dir",
            kubelet_dir,
            "--plugin-registry-dir",
            tmp.path() + "/none",
            "--state-dir",
            tmp.path() + "/state",
            "--config",
            config,
            "--metrics-address",
            "127.0.0.1:0"};
  }
};

int run(int idle_seconds, int rounds, int calls, const std::string& plugin_binary,
        const std::string& self) {
  Setup s;
  std::system(("cp -a " KUBE_RDMA_FIXTURES "/a100-roce " + s.tmp.path() + "/").c_str());
  s.node = s.tmp.path() + "/a100-roce";
  s.kubelet_dir = s.tmp.sub("kubelet");
  s.config = s.tmp.path() + "/config.json";
  std::ofstream(s.config) << kConfig;
  const std::string log = s.tmp.path() + "/plugin.log";

  // 1. Start until registered.
  std::vector<double> start_us, true_us, echo_start_us, sigterm_us;
  for (int i = 0; i < rounds; ++i) {
    KubeletSimulator kubelet(s.kubelet_dir);
    if (!kubelet.start()) {
      return 1;
    }
    const auto t0 = Clock::now();
    auto plugin = PluginProcess::start(plugin_binary, s.args(), log);
    if (!plugin || !kubelet.waitFor(bothRegistered, kDeadline)) {
      std::cerr << "plugin did not register:\n" << (plugin ? (*plugin)->logs() : "") << "\n";
      return 1;
    }
    start_us.push_back(micros(Clock::now() - t0));
    const auto t_term = Clock::now();
    auto exit_code = (*plugin)->terminate(kDeadline);
    if (!exit_code || *exit_code != 0) {
      std::cerr << "plugin did not exit 0 on SIGTERM\n";
      return 1;
    }
    sigterm_us.push_back(micros(Clock::now() - t_term));
    const auto t1 = Clock::now();
    auto t = PluginProcess::start("/bin/true", {}, "/dev/null");
    (void)(*t)->terminate(kDeadline); // already exited: reaps it
    true_us.push_back(micros(Clock::now() - t1));

    const std::string socket = s.tmp.path() + "/echo-start.sock";
    const auto t2 = Clock::now();
    auto echo = PluginProcess::start(self, {"--echo-server", socket}, "/dev/null");
    // A fresh channel per attempt: one that failed would wait out gRPC's reconnect backoff.
    for (bool answered = false; !answered;) {
      auto stub = v1beta1::DevicePlugin::NewStub(
          grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(50));
      v1beta1::DevicePluginOptions options;
      answered = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok();
      if (!answered) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    }
    echo_start_us.push_back(micros(Clock::now() - t2));
    (void)(*echo)->terminate(kDeadline);
  }

  // The long-running pair: the plugin with both pools registered, and the echo server.
  KubeletSimulator kubelet(s.kubelet_dir);
  if (!kubelet.start()) {
    return 1;
  }
  auto plugin = PluginProcess::start(plugin_binary, s.args(), log);
  const std::string echo_socket = s.tmp.path() + "/echo.sock";
  auto echo = PluginProcess::start(self, {"--echo-server", echo_socket}, "/dev/null");
  if (!plugin || !echo || !kubelet.waitFor(bothRegistered, kDeadline)) {
    return 1;
  }
  auto channel = grpc::CreateChannel("unix:" + echo_socket, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + kDeadline)) {
    return 1;
  }
  auto echo_stub = v1beta1::DevicePlugin::NewStub(channel);
  // The plugin's socket also through a channel of its own, called exactly as the echo is: the
  // simulator's channel carries the ListAndWatch stream, and its process runs the kubelet's
  // registration server, whose threads take part in each call's wake-ups.
  auto direct_channel =
      grpc::CreateChannel("unix:" + s.kubelet_dir + "/" + poolSocketName("example.com/shared"),
                          grpc::InsecureChannelCredentials());
  if (!direct_channel->WaitForConnected(std::chrono::system_clock::now() + kDeadline)) {
    return 1;
  }
  auto direct_stub = v1beta1::DevicePlugin::NewStub(direct_channel);
  // 2. Allocate round trips (one container per call, as the kubelet), interleaved with the echo.
  std::vector<double> alloc_us, direct_us, echo_us;
  for (int i = 0; i < calls; ++i) {
    const std::string id = std::to_string(i % 64);
    auto t0 = Clock::now();
    if (!kubelet.allocate("example.com/shared", {id})) {
      return 1;
    }
    alloc_us.push_back(micros(Clock::now() - t0));
    const auto direct = timedAllocate(*direct_stub, id);
    const auto echoed = timedAllocate(*echo_stub, "0");
    if (!direct || !echoed) {
      return 1;
    }
    direct_us.push_back(*direct);
    echo_us.push_back(*echoed);
  }

  // 3. Port DOWN -> Unhealthy in ListAndWatch, and back; kubelet restart -> registered again.
  std::vector<double> port_us, restart_us;
  const std::string state = s.node + "/sys/class/infiniband/mlx5_2/ports/1/state";
  auto healthy = [&](int n) {
    return
        [n](const KubeletView& v) { return v.resources.at("example.com/hca").healthyCount() == n; };
  };
  for (int i = 0; i < rounds; ++i) {
    for (auto [text, want] : {std::pair{"1: DOWN\n", 3}, std::pair{"4: ACTIVE\n", 4}}) {
      const auto t0 = Clock::now();
      std::ofstream(state, std::ios::trunc) << text;
      if (!kubelet.waitFor(healthy(want), kDeadline)) {
        return 1;
      }
      port_us.push_back(micros(Clock::now() - t0));
    }
    const auto t0 = Clock::now();
    if (!kubelet.restart() || !kubelet.waitFor(bothRegistered, kDeadline)) {
      return 1;
    }
    restart_us.push_back(micros(Clock::now() - t0));
  }

  // 4. Idle footprint.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const long plugin_rss = vmRssKiB((*plugin)->pid());
  const long echo_rss = vmRssKiB((*echo)->pid());
  const long plugin_cpu0 = cpuTicks((*plugin)->pid());
  const long echo_cpu0 = cpuTicks((*echo)->pid());
  const double plugin_sched0 = cpuSeconds((*plugin)->pid());
  const double echo_sched0 = cpuSeconds((*echo)->pid());
  std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
  const double plugin_sched = 100.0 * (cpuSeconds((*plugin)->pid()) - plugin_sched0) / idle_seconds;
  const double echo_sched = 100.0 * (cpuSeconds((*echo)->pid()) - echo_sched0) / idle_seconds;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK)) * idle_seconds;
  const double plugin_cpu =
      100.0 * static_cast<double>(cpuTicks((*plugin)->pid()) - plugin_cpu0) / ticks;
  const double echo_cpu = 100.0 * static_cast<double>(cpuTicks((*echo)->pid()) - echo_cpu0) / ticks;

  const auto sg = stats(sigterm_us);
  const auto st = stats(start_us), tr = stats(true_us), es = stats(echo_start_us),
             al = stats(alloc_us), di = stats(direct_us), ec = stats(echo_us), po = stats(port_us),
             re = stats(restart_us);
  std::printf("start until registered (2 pools), %d runs: median %.1f ms, max %.1f ms | "
              "references: trivial gRPC server start until it answers: median %.1f ms; "
              "fork/exec /bin/true: median %.1f ms\n",
              rounds, st.p50 / 1000, st.max / 1000, es.p50 / 1000, tr.p50 / 1000);
  std::printf("SIGTERM until exit 0 (sockets removed), %d runs: median %.1f ms, max %.1f ms\n",
              rounds, sg.p50 / 1000, sg.max / 1000);
  std::printf("Allocate round trip, %d calls: through the kubelet simulator p50 %.0f us, p99 %.0f "
              "us; on a channel of its own p50 %.0f us, p99 %.0f us | reference gRPC echo over a "
              "unix socket, same client: p50 %.0f us, p99 %.0f us\n",
              calls, al.p50, al.p99, di.p50, di.p99, ec.p50, ec.p99);
  std::printf("port state change seen in ListAndWatch, %zu changes: median %.0f ms, max %.0f ms "
              "(health interval 500 ms)\n",
              port_us.size(), po.p50 / 1000, po.max / 1000);
  std::printf("kubelet restart until re-registered (both pools), %d restarts: median %.1f ms, "
              "max %.1f ms\n",
              rounds, re.p50 / 1000, re.max / 1000);
  std::printf("idle RSS: plugin %.1f MiB | reference echo server %.1f MiB\n",
              static_cast<double>(plugin_rss) / 1024.0, static_cast<double>(echo_rss) / 1024.0);
  std::printf("idle CPU over %d s, utime+stime: plugin %.3f%% of a core | reference echo server "
              "%.3f%%\n",
              idle_seconds, plugin_cpu, echo_cpu);
  std::printf("idle CPU over %d s, schedstat (ns): plugin %.4f%% of a core | reference echo "
              "server %.4f%%\n",
              idle_seconds, plugin_sched, echo_sched);
  (void)(*plugin)->terminate(kDeadline);
  return 0;
}

int runEchoLab(int rounds, int calls, const std::string& self) {
  TempDir tmp;
  std::vector<std::unique_ptr<PluginProcess>> servers;
  std::vector<std::unique_ptr<v1beta1::DevicePlugin::Stub>> stubs;
  for (const char* config : kEchoConfigs) {
    const std::string socket = tmp.path() + "/" + config + ".sock";
    auto server = PluginProcess::start(self, {"--echo-server", socket, config}, "/dev/null");
    if (!server) {
      return 1;
    }
    servers.push_back(std::move(*server));
    auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + kDeadline)) {
      std::cerr << "echo server " << config << " did not answer\n";
      return 1;
    }
    stubs.push_back(v1beta1::DevicePlugin::NewStub(channel));
  }
  const size_t n = stubs.size();
  std::vector<std::vector<double>> p50_ratios(n);
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::vector<double>> us(n);
    for (int i = 0; i < calls + 100; ++i) { // the first 100 warm up
      for (size_t j = 0; j < n; ++j) {
        const size_t k = (j + static_cast<size_t>(i)) % n; // no server always called first
        const auto round_trip = timedAllocate(*stubs[k], "0");
        if (!round_trip) {
          std::cerr << "echo server " << kEchoConfigs[k] << " failed\n";
          return 1;
        }
        if (i >= 100) {
          us[k].push_back(*round_trip);
        }
      }
    }
    const double sync_p50 = stats(us[0]).p50;
    std::printf("round %d:", round + 1);
    for (size_t k = 0; k < n; ++k) {
      const auto st = stats(us[k]);
      p50_ratios[k].push_back(st.p50 / sync_p50);
      std::printf(" %s p50 %.0f us p99 %.0f us;", kEchoConfigs[k], st.p50, st.p99);
    }
    std::printf("\n");
  }
  std::printf("p50 over sync's, median of %d rounds:", rounds);
  for (size_t k = 0; k < n; ++k) {
    std::printf(" %s %.2f;", kEchoConfigs[k], stats(p50_ratios[k]).p50);
  }
  std::printf("\n");
  for (auto& server : servers) {
    (void)server->terminate(kDeadline);
  }
  return 0;
}

} // namespace
} // namespace kube_rdma

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if ((args.size() == 2 || args.size() == 3) && args[0] == "--echo-server") {
    return kube_rdma::runEchoServer(args[1], args.size() == 3 ? args[2] : "sync");
  }
  const bool echo_lab = !args.empty() && args[0] == "--echo-lab";
  if (echo_lab) {
    args.erase(args.begin());
  }
  int idle_seconds = 60, rounds = 10, calls = 2000;
  std::string plugin_binary = KUBE_RDMA_PLUGIN_BINARY;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--plugin") {
      plugin_binary = args[i + 1]; // another build of rdma-device-plugin, to compare
      continue;
    }
    const int value = std::stoi(args[i + 1]);
    if (args[i] == "--idle-seconds") {
      idle_seconds = value;
    } else if (args[i] == "--rounds") {
      rounds = value;
    } else if (args[i] == "--calls") {
      calls = value;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  const std::string self = std::filesystem::canonical("/proc/self/exe");
  if (echo_lab) {
    return kube_rdma::runEchoLab(rounds, calls, self);
  }
  return kube_rdma::run(idle_seconds, rounds, calls, plugin_binary, self);
}
