#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "test/apiserver/simulated_api.h"
#include "test/e2e/demo_console.h"
#include "test/e2e/demo_report.h"

// The demo's DRA part (steps 8 to 10): rdma-dra-driver against the API-server simulator on the
// demo's copy of the A100 fixture, with the demo as the kubelet and the scheduler.
namespace kube_rdma {

struct DraDemoSetup {
  std::string binary_dir; // the build tree
  std::string source_dir; // for examples/dra/
  std::string node_dir;   // the fixture node: sys/, proc/, dev/
  std::string work_dir;   // sockets, CDI specs, checkpoint, logs
  std::string node_name;
};

class DraDemo {
public:
  // `child` holds the driver's pid while it runs.
  DraDemo(Report& report, DraDemoSetup setup, std::atomic<pid_t>& child)
      : report_(report), setup_(std::move(setup)), child_(child) {}
  ~DraDemo() { stop(); }
  DraDemo(const DraDemo&) = delete;
  DraDemo& operator=(const DraDemo&) = delete;

  // 8. The simulator and the driver, registered as the kubelet's plugin watcher does; the slice.
  bool startDriver();
  // 9. A claim of examples/dra/gpu-with-nic.yaml allocated as the scheduler would,
  // NodePrepareResources, the claim's CDI spec.
  void gpuClaim();
  // 10. What NCCL in the claim's container reads.
  void claimNcclConf();
  void stop();

private:
  Report& report_;
  const DraDemoSetup setup_;
  std::atomic<pid_t>& child_;
  std::unique_ptr<SimulatedApi> api_;
  PluginProcessPtr driver_;
  std::string dra_dir_;
  std::vector<SliceDevice> slice_;
  std::string claim_uid_;
  std::string claim_nic_;       // the rdmaDevice allocated
  std::string claim_nccl_conf_; // on the host, from the claim's CDI spec
};

} // namespace kube_rdma
