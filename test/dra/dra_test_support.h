#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "common/util/clock.h"
#include "common/util/log.h"
#include "common/util/metrics.h"
#include "common/node/sysfs_discovery.h"
#include "dra/claim_rendering.h"
#include "dra/claim_preparer.h"
#include "dra/claim_reader.h"
#include "dra/claim_store.h"
#include "dra/dra_metrics.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {

inline constexpr const char* kTestNode = "gpu-node-1";

inline NodeTopology discoverFixture(const std::string& name) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  return discoverFromSysfs(DiscoveryRoots{base + "/sys", base + "/proc"});
}

inline std::string readTestData(const std::string& name) {
  return readTestFile(std::string(KUBE_RDMA_DRA_TESTDATA) + "/" + name);
}

inline PrepareContext testContext(const std::string& dir) {
  return PrepareContext{kTestNode, dir + "/cdi", dir + "/state", defaultPluginConfig()};
}

// The API server's side of ClaimReader: the claims of testdata/, by namespace and name, as the
// API server sends them; any other name is the API's 404.
class TestdataClaimReader final : public ClaimReader {
public:
  // namespace/name -> testdata file
  explicit TestdataClaimReader(std::map<std::string, std::string> files)
      : files_(std::move(files)) {}

  // ClaimReader
  Result<nlohmann::json> getResourceClaim(const std::string& namespace_name,
                                          const std::string& name) override {
    const auto it = files_.find(namespace_name + "/" + name);
    if (it == files_.end()) {
      return makeError("resourceclaims.resource.k8s.io \"" + name + "\" not found");
    }
    return nlohmann::json::parse(readTestData(it->second));
  }

private:
  std::map<std::string, std::string> files_;
};

// The claims of testdata/ and their kubelet names.
inline const ClaimRef kTwoNicsClaim{"ml", "train-0-rdma-x7k2p",
                                    "3f1c9a2e-8d4b-4a6f-9c1e-2b7d5e8f0a13"};
inline const ClaimRef kBadConfigClaim{"ml", "train-1-rdma-q9d4m",
                                      "c4e7b1a0-2d3f-4e5a-8b9c-0d1e2f3a4b5c"};

// A ClaimPreparer for the A100 fixture node, with its checkpoint and CDI directory in a fresh
// temporary directory, reading the claims of testdata/.
struct PreparerHarness {
  PreparerHarness() {
    std::filesystem::create_directories(context.cdi_dir);
    auto opened = ClaimStore::open(context.state_dir);
    if (!opened.ok()) {
      ADD_FAILURE() << opened.error().message;
      return;
    }
    store = std::move(*opened);
    preparer = std::make_unique<ClaimPreparer>(
        reader, *store, context, discoverFixture("a100-roce"), logger, metrics, clock);
  }

  TempDir dir;
  PrepareContext context = testContext(dir.path());
  TestdataClaimReader reader{{{"ml/train-0-rdma-x7k2p", "claim-two-nics.json"},
                              {"ml/train-1-rdma-q9d4m", "claim-bad-config.json"}}};
  std::ostringstream log;
  Logger logger{log};
  MetricsRegistry registry;
  DraMetrics metrics{registry};
  RealClock clock;
  ClaimStorePtr store;
  std::unique_ptr<ClaimPreparer> preparer;
};

} // namespace kube_rdma
