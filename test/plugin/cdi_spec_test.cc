#include "plugin/cdi_spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/fakes/a100_pools.h"

namespace kube_rdma {
namespace {

NcclHookConfig noNcclHook() {
  NcclHookConfig hook;
  hook.enabled = false;
  return hook;
}

TEST(CdiSpec, NamesTheMemlockHookAtCreateRuntimeAndMarksCdi) {
  MemlockHookConfig memlock;
  memlock.limit = MemlockLimit{MemlockLimit::Mode::kBytes, 1048576};
  const auto spec =
      nlohmann::json::parse(cdiSpecJson(a100SharedPool(), a100Topology(), memlock, noNcclHook()));
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
  const auto spec =
      nlohmann::json::parse(cdiSpecJson(a100SharedPool(), a100Topology(), memlock, noNcclHook()));
  EXPECT_FALSE(spec["containerEdits"].contains("hooks"));
  EXPECT_EQ(spec["containerEdits"]["env"], nlohmann::json::array({"KUBE_RDMA_CDI=1"}));
}

TEST(CdiSpec, ARocePoolResolvesItsGidIndexPerContainerAtCreateContainer) {
  MemlockHookConfig memlock;
  memlock.limit.mode = MemlockLimit::Mode::kOff;
  NodePool pool = a100SharedPool();
  pool.spec.nccl.gid_policy.range = *parseCidr("25.11.128.0/17");
  const auto spec =
      nlohmann::json::parse(cdiSpecJson(pool, a100Topology(), memlock, NcclHookConfig{}));
  EXPECT_EQ(spec["containerEdits"]["hooks"], nlohmann::json::parse(R"([{
    "hookName": "createContainer",
    "path": "/var/lib/kube-rdma/bin/kube-rdma-nccl-hook",
    "args": ["kube-rdma-nccl-hook", "--container-path=/etc/nccl.conf", "--addr-family=AF_INET",
             "--addr-range=25.11.128.0/17", "--sysfs-root=/sys",
             "--log-file=/var/lib/kube-rdma/nccl-hook.log"]}])"));
}

TEST(CdiSpec, NoPerContainerHookForAFixedIndexNoNcclConfOrTheHookTurnedOff) {
  MemlockHookConfig memlock;
  memlock.limit.mode = MemlockLimit::Mode::kOff;
  NodePool fixed = a100SharedPool();
  fixed.spec.nccl.gid_index_mode = GidIndexMode::kFixed;
  NodePool no_conf = a100SharedPool();
  no_conf.spec.nccl.nccl_conf_enabled = false;
  for (const auto& [pool, hook] :
       {std::pair{fixed, NcclHookConfig{}}, std::pair{no_conf, NcclHookConfig{}},
        std::pair{a100SharedPool(), noNcclHook()}}) {
    const auto spec = nlohmann::json::parse(cdiSpecJson(pool, a100Topology(), memlock, hook));
    EXPECT_FALSE(spec["containerEdits"].contains("hooks")) << spec.dump();
  }
}

} // namespace
} // namespace kube_rdma
