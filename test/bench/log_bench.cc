// The cost of one log line as both daemons write them (one per Allocate, one per review), next
// to the reference of building the same line as an nlohmann::ordered_json and dumping it. The
// sink is /dev/null, so the figure includes the write but no disk.

#include <benchmark/benchmark.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/util/log.h"

namespace kube_rdma {
namespace {

// The webhook's review line, as many fields and about as long.
void logReview(Logger& log) {
  log.info("admission review", {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                                {"pod", "training/pytorchjob-master-0"},
                                {"outcome", "patched"},
                                {"injected", "ipc_lock,shm,env"},
                                {"latency_us", "123"}});
}

void BM_LogLine(benchmark::State& state) {
  std::ofstream sink("/dev/null");
  Logger log(sink, state.range(0) == 1 ? LogFormat::kJson : LogFormat::kText);
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    logReview(log);
  }
}
BENCHMARK(BM_LogLine)->ArgName("json")->Arg(0)->Arg(1);

// Reference: the same JSON object built and dumped by nlohmann, then written the same way.
void BM_ReferenceNlohmannLine(benchmark::State& state) {
  std::ofstream sink("/dev/null");
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    nlohmann::ordered_json obj;
    obj["ts"] = "2026-11-30T18:42:05.123Z";
    obj["level"] = "info";
    obj["msg"] = "admission review";
    obj["uid"] = "705ab4f5-6393-11e8-b7cc-42010a800002";
    obj["pod"] = "training/pytorchjob-master-0";
    obj["outcome"] = "patched";
    obj["injected"] = "ipc_lock,shm,env";
    obj["latency_us"] = "123";
    sink << obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n' << std::flush;
  }
}
BENCHMARK(BM_ReferenceNlohmannLine);

} // namespace
} // namespace kube_rdma

BENCHMARK_MAIN();
