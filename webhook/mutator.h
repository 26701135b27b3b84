#pragma once

#include <set>
#include <string>
#include <vector>

#include "webhook/policy.h"
#include "webhook/dra_claims.h"
#include "webhook/pod_fields.h"

// The pure core of rdma-webhook: a pod and the policy in, an RFC 6902 patch and warnings out.
// No I/O, no clock, no globals; the same input always gives the same output.
namespace kube_rdma {

// Pod annotations the webhook reads and writes (DESIGN.md).
inline constexpr const char* kRdmaAnnotation = "kube-rdma.io/rdma";
inline constexpr const char* kRdmaContainerAnnotation = "kube-rdma.io/rdma-container";
inline constexpr const char* kInjectAnnotation = "kube-rdma.io/inject";
inline constexpr const char* kInjectedAnnotation = "kube-rdma.io/injected";
inline constexpr const char* kMirrorAnnotation = "kubernetes.io/config.mirror";
// The base name of the /dev/shm volume; a suffix is added when a pod already uses it otherwise.
inline constexpr const char* kShmVolumeName = "kube-rdma-shm";

struct MutationResult {
  // RFC 6902 operations as JSON text; "" when the pod is left as it is.
  std::string patch;
  std::vector<std::string> warnings;
  // Kinds of change made: "resources", "ipc-lock", "shm", "env", "annotations".
  std::set<std::string> applied;
  // Why the pod was not considered (mirror pod, opted out, namespace, bad shorthand); empty
  // otherwise, including for pods that asked for no RDMA.
  std::string skipped;
};

// Why `policy` leaves `pod` alone whatever it asks for (mirror pod, opted out, namespace); "" when
// it does not.
std::string podSkipReason(JsonElement pod, const std::string& request_namespace,
                          const WebhookPolicy& policy);

// Applies `policy` to `pod` (the AdmissionReview's request.object, read where it was parsed).
// `request_namespace` is used when the pod's metadata has no namespace (controllers create pods
// without one). A container is an RDMA container when it asks for one of the policy's resources or
// uses an RDMA request of `claims` (the pod's claims, read by the caller). Never throws: a pod of
// an unexpected shape is left unchanged with a warning.
MutationResult mutatePod(JsonElement pod, const std::string& request_namespace,
                         const WebhookPolicy& policy, const PodRdmaClaims& claims = {});

} // namespace kube_rdma
