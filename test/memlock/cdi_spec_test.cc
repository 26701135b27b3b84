#include "plugin/cdi_spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/memlock/memlock_test_support.h"

namespace kube_rdma {
namespace {

TEST(CdiSpec, NamesTheMemlockHookAtCreateRuntimeAndMarksCdi) {
  MemlockHookConfig memlock;
  memlock.limit = MemlockLimit{MemlockLimit::Mode::kBytes, 1048576};
  const auto spec = nlohmann::json::parse(cdiSpecJson(a100SharedPool(), a100Topology(), memlock));
  EXPECT_EQ(spec["kind"], "kube-rdma.io/rdma_shared");
  EXPECT_EQ(spec["devices"].size(), 8u);
  const auto& edits = spec["containerEdits"];
  EXPECT_EQ(edits["env"], nlohmann::json::array({"KUBE_RDMA_CDI=1"}));
  EXPECT_EQ(edits["deviceNodes"][0]["path"], "/dev/infiniband/rdma_cm");
  EXPECT_EQ(edits["hooks"], nlohmann::json::parse(R"([{
    "hookName": "createRuntime",
    "path": "/var/lib/kube-rdma/bin/kube-rdma-memlock-hook",
    "args": ["kube-rdma-memlock-hook", "--memlock=1048576",
             "--log-file=/var/lib/kube-rdma/memlock-hook.log"]}])"));
}

TEST(CdiSpec, MemlockOffLeavesTheHookOutButKeepsTheMarker) {
  MemlockHookConfig memlock;
  memlock.limit.mode = MemlockLimit::Mode::kOff;
  const auto spec = nlohmann::json::parse(cdiSpecJson(a100SharedPool(), a100Topology(), memlock));
  EXPECT_FALSE(spec["containerEdits"].contains("hooks"));
  EXPECT_EQ(spec["containerEdits"]["env"], nlohmann::json::array({"KUBE_RDMA_CDI=1"}));
}

} // namespace
} // namespace kube_rdma
