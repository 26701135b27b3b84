#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/util/clock.h"
#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/pools/nccl_settings.h"
#include "common/util/pod_warning.h"
#include "rpc/pod_resources_client.h"

// "Granted RDMA, not using it": a pod that holds RDMA ports whose data counters never move is
// almost always a job whose NCCL fell back to TCP sockets without a word above INFO level
// (docs/is-my-job-using-rdma.md). Both node daemons watch for it and say so on the pod, as a
// Warning event, and in /metrics (docs/plugin.md, "Granted RDMA, not using it").
namespace kube_rdma {

inline constexpr MetricFamily kPodRdmaUnusedMetric{
    "kube_rdma_pod_rdma_unused",
    "1 for each pod that has held RDMA ports for unusedRdmaAfterSeconds without their data "
    "counters moving (granted RDMA, not using it), while it holds them."};

// One pod holding ports of kube-rdma's pools, and what those ports have carried: the sum of their
// port_xmit_data and port_rcv_data.
struct PodPortTraffic {
  std::string pod_namespace;
  std::string pod_name;
  std::vector<std::string> ports; // "mlx5_1:1", sorted
  uint64_t data_words = 0;
  bool operator==(const PodPortTraffic&) const = default;
};

// The ports of kube-rdma's pools a container holds: the device plugin's by its device IDs, the
// DRA driver's by the devices of its claims.
using PortsOfFn = std::function<std::vector<HcaPort>(const ContainerHoldings&)>;
// A port's port_xmit_data + port_rcv_data (readPortDataWords); nullopt when unreadable.
using DataWordsFn = std::function<std::optional<uint64_t>(const HcaPort&)>;

// Per pod, from the kubelet's holdings, each port held read once through `data_words`. A pod with
// a port that cannot be read is left out: the check cannot judge it.
std::vector<PodPortTraffic> podPortTraffic(const std::vector<ContainerHoldings>& held,
                                           const PortsOfFn& ports_of,
                                           const DataWordsFn& data_words);

// Bookkeeping over samples, no I/O. A pod is flagged once, when it has held its ports for
// `after` and their data counters have not moved since it was first seen; a pod whose ports moved
// at any time is never flagged (on a shared port another pod's traffic counts too: a miss, never
// a false alarm). A counter that went down (a reset) counts as moved. Pods that are gone are
// forgotten.
class UnusedRdmaDetector {
public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // The pods this sample flags, each once in its life.
  std::vector<PodPortTraffic> observe(TimePoint now, std::chrono::seconds after,
                                      const std::vector<PodPortTraffic>& sample);
  // The pods flagged so far that still hold their ports, still without traffic.
  std::vector<PodPortTraffic> flagged() const;

private:
  struct Tracked {
    TimePoint first_seen;
    PodPortTraffic first;
    bool moved = false;
    bool flagged = false;
  };
  std::map<std::pair<std::string, std::string>, Tracked> pods_; // by namespace, name
};

// The Warning event for a flagged pod: what it holds, for how long, and where to look.
PodWarning unusedRdmaWarning(const PodPortTraffic& pod, std::string uid,
                             std::chrono::seconds after);

// Runs the detector on a thread of its own: every `after`/10 (1 s to 30 s) it takes a sample,
// posts a Warning for each pod flagged whose UID is known, and keeps
// kube_rdma_pod_rdma_unused{namespace, pod} 1 for each flagged pod while it holds its ports and
// they carry nothing.
// `after` of 0 turns it off (no sample is taken). start() starts the thread; the destructor stops
// it.
class UnusedRdmaWatcher {
public:
  struct Sample {
    std::chrono::seconds after{0};                   // the config's unusedRdmaAfterSeconds
    std::optional<std::vector<PodPortTraffic>> pods; // nullopt: the kubelet did not answer
  };
  using SampleFn = std::function<Sample()>;
  // The UID of a pod by namespace and name, "" when unknown (the event needs it).
  using UidFn = std::function<std::string(const std::string&, const std::string&)>;

  UnusedRdmaWatcher(ClockPtr clock, SampleFn sample, UidFn uid, PodWarningSink warn,
                    MetricsRegistry& metrics, Logger& log);
  ~UnusedRdmaWatcher();
  UnusedRdmaWatcher(const UnusedRdmaWatcher&) = delete;
  UnusedRdmaWatcher& operator=(const UnusedRdmaWatcher&) = delete;

  void start();
  // One round: sample, detect, warn, update the metric. What the thread calls; tests call it
  // with a fake clock. Returns how long to wait before the next round.
  std::chrono::milliseconds checkOnce();

private:
  void run();

  const ClockPtr clock_;
  const SampleFn sample_;
  const UidFn uid_;
  const PodWarningSink warn_;
  MetricsRegistry& metrics_;
  Logger& log_;
  UnusedRdmaDetector detector_; // the watcher's thread only
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace kube_rdma
