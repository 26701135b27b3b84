// CPU per review (Google Benchmark; target webhook_bench, not run by ctest). The floor is what
// nlohmann-json alone spends parsing and dumping the same AdmissionReview: any review must at
// least parse the body and write a reply of similar size.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "webhook/review.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

json testdata(const std::string& file) {
  std::ifstream in(std::filesystem::path(KUBE_RDMA_WEBHOOK_TESTDATA) / file);
  return json::parse(in);
}

// The AdmissionReview of a pod CREATE as the API server sends it.
std::string reviewOf(const json& pod) {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"namespace", "training"},
                {"operation", "CREATE"},
                {"userInfo", {{"username", "system:serviceaccount:kubeflow:training-operator"}}},
                {"object", pod},
                {"oldObject", nullptr},
                {"dryRun", false}}}}
      .dump();
}

std::string guideReview() {
  return reviewOf(testdata("pods/pytorchjob-master.json"));
}

// The reference: parse the body, dump it back. Not inlined, so callgrind can count it alone:
//   valgrind --tool=callgrind --toggle-collect='*parseAndDump*'
//   --toggle-collect='*reviewAdmission*'
[[gnu::noinline]] std::string parseAndDump(const std::string& body) {
  return json::parse(body).dump();
}

void BM_NlohmannParseDump(benchmark::State& state) {
  const std::string body = guideReview();
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    std::string out = parseAndDump(body);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_NlohmannParseDump);

// The whole review of the guide's master pod: decode, mutate, diff, encode.
void BM_ReviewGuidePod(benchmark::State& state) {
  const std::string body = guideReview();
  const WebhookPolicy policy = defaultWebhookPolicy();
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    ReviewOutcome outcome = reviewAdmission(body, policy);
    benchmark::DoNotOptimize(outcome.body);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ReviewGuidePod);

// A pod with two resource claims, one of an RDMA class, both answered from the claim cache as in a
// burst of a Job's pods.
void BM_ReviewDraPod(benchmark::State& state) {
  const std::string body = reviewOf(testdata("dra/trainer.pod.json"));
  const WebhookPolicy policy = defaultWebhookPolicy();
  const std::vector<ClaimRequest> from_template =
      claimRequests(testdata("dra/gpu-and-nic.template.json")["spec"]["spec"]);
  const std::vector<ClaimRequest> from_claim =
      claimRequests(testdata("dra/shared-nics.claim.json")["spec"]);
  const ClaimSpecLookup cached = [&](const std::string&, const PodClaimSource& source) {
    return Result<std::vector<ClaimRequest>>(source.claim_name.empty() ? from_template
                                                                       : from_claim);
  };
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    ReviewOutcome outcome = reviewAdmission(body, policy, cached);
    benchmark::DoNotOptimize(outcome.body);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ReviewDraPod);

// Between two reviews at a light load other programs run and the review's code and data leave
// the caches: 32 MiB written between iterations gives about the time the webhook's own histogram
// shows at 500 reviews/s over 8 connections (~100 µs mean).
void evictCaches() {
  static std::vector<char> junk(size_t{32} << 20);
  for (size_t i = 0; i < junk.size(); i += 64) {
    junk[i] = static_cast<char>(junk[i] + 1);
  }
  benchmark::ClobberMemory();
}

void BM_ReviewGuidePodCold(benchmark::State& state) {
  const std::string body = guideReview();
  const WebhookPolicy policy = defaultWebhookPolicy();
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    state.PauseTiming();
    evictCaches();
    state.ResumeTiming();
    ReviewOutcome outcome = reviewAdmission(body, policy);
    benchmark::DoNotOptimize(outcome.body);
  }
}
BENCHMARK(BM_ReviewGuidePodCold);

void BM_NlohmannParseDumpCold(benchmark::State& state) {
  const std::string body = guideReview();
  for (auto _ : state) { // NOLINT(clang-analyzer-deadcode.DeadStores): the library's loop idiom
    state.PauseTiming();
    evictCaches();
    state.ResumeTiming();
    std::string out = parseAndDump(body);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_NlohmannParseDumpCold);

} // namespace
} // namespace kube_rdma

BENCHMARK_MAIN();
