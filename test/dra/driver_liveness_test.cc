// judgeDriverLiveness: what /healthz of rdma-dra-driver answers, rule by rule.
#include "dra/driver_liveness.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

using std::chrono::seconds;

const auto kStart = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
const std::chrono::milliseconds kTimeout = seconds(60);

// A driver registered by the kubelet whose last slice round succeeded at `kStart`.
DriverLivenessInputs working() {
  return {true, true, RegistrationOutcome{true, true, ""}, PublishingState{kStart, ""}, kStart};
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

TEST(DriverLiveness, PublishingFailingForLongerThanTheTimeoutFailsWithTheLastError) {
  DriverLivenessInputs inputs = working();
  inputs.publishing.last_error = "listing ResourceSlices: HTTP 403 Forbidden: no";
  EXPECT_EQ(verdict(inputs, seconds(60)), "ok\n");
  EXPECT_EQ(verdict(inputs, seconds(61)),
            "no ResourceSlice round has succeeded for 1m: listing ResourceSlices: HTTP 403 "
            "Forbidden: no");
  // Never a success: counted from the start.
  inputs.publishing = {};
  EXPECT_EQ(verdict(inputs, seconds(61)),
            "no ResourceSlice round has succeeded for 1m: none finished");
}

} // namespace
} // namespace kube_rdma
