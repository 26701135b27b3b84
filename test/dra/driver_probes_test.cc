// judgeDriverLiveness and judgeDriverReadiness: what /healthz and /readyz of rdma-dra-driver
// answer, rule by rule.
#include "dra/driver_probes.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

using std::chrono::seconds;

const auto kStart = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
const std::chrono::milliseconds kTimeout = seconds(60);

// A driver registered by the kubelet.
DriverLivenessInputs working() {
  return {true, true, RegistrationOutcome{true, true, ""}, kStart};
}

std::string verdict(const DriverLivenessInputs& inputs, std::chrono::steady_clock::duration after) {
  Result<std::string> judged = judgeDriverLiveness(inputs, kStart + after, kTimeout);
  return judged.ok() ? *judged : judged.error().message;
}

TEST(DriverLiveness, AWorkingDriverIsOk) {
  EXPECT_EQ(verdict(working(), seconds(59)), "ok\n");
}

TEST(DriverLiveness, AGoneSocketFailsAtOnce) {
  DriverLivenessInputs inputs = working();
  inputs.dra_socket_present = false;
  EXPECT_EQ(verdict(inputs, seconds(0)),
            "the DRA socket is gone: the kubelet cannot call the driver");
  inputs = working();
  inputs.registration_socket_present = false;
  EXPECT_EQ(verdict(inputs, seconds(0)),
            "the registration socket is gone: the kubelet cannot find the driver");
}

TEST(DriverLiveness, ARefusedRegistrationFailsWithTheKubeletsReason) {
  DriverLivenessInputs inputs = working();
  inputs.registration = {true, false, "unsupported versions"};
  EXPECT_EQ(verdict(inputs, seconds(0)),
            "the kubelet refused the registration: unsupported versions");
}

TEST(DriverLiveness, NoRegistrationFailsOnlyAfterTheTimeout) {
  DriverLivenessInputs inputs = working();
  inputs.registration = {};
  EXPECT_EQ(verdict(inputs, seconds(60)), "ok\n");
  EXPECT_EQ(verdict(inputs, seconds(61)), "the kubelet has not registered the driver within 1m");
}

TEST(DriverLiveness, AnUnreachableApiServerIsNoReasonToRestart) {
  // Nothing about the API server is an input: a brownout must not restart the fleet.
  EXPECT_EQ(verdict(working(), std::chrono::hours(1)), "ok\n");
}

// Publishing whose watch is synced and whose last round succeeded at `kStart`.
PublishingState publishing() {
  PublishingState state;
  state.last_success = kStart;
  state.watch.synced = true;
  state.watch.connected = true;
  return state;
}

std::string readiness(const PublishingState& state) {
  Result<std::string> judged = judgeDriverReadiness(state, kStart + seconds(90));
  return judged.ok() ? *judged : judged.error().message;
}

TEST(DriverReadiness, SyncedConnectedAndWrittenIsReady) {
  EXPECT_EQ(readiness(publishing()), "ok\n");
}

TEST(DriverReadiness, AnUnreachableApiServerSaysSinceWhenAndWhy) {
  PublishingState state = publishing();
  state.watch.connected = false;
  state.watch.disconnected_since = kStart + seconds(30);
  state.watch.last_error = "watching /apis/resource.k8s.io/v1/resourceslices: Connection";
  EXPECT_EQ(readiness(state), "the API server has not answered for 1m: watching "
                              "/apis/resource.k8s.io/v1/resourceslices: Connection");
}

TEST(DriverReadiness, AFailedWriteIsNotReady) {
  PublishingState state = publishing();
  state.last_error = "creating a ResourceSlice: HTTP 403 Forbidden: no";
  EXPECT_EQ(readiness(state),
            "publishing the ResourceSlices failed: creating a ResourceSlice: HTTP 403 Forbidden: "
            "no");
}

TEST(DriverReadiness, NotReadBeforeTheFirstList) {
  EXPECT_EQ(readiness(PublishingState{}), "the node's ResourceSlices have not been read yet");
}

} // namespace
} // namespace kube_rdma
