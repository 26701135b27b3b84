#include "nri/nri_session.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ttrpc/request.pb.h"

namespace kube_rdma {
namespace {

// The runtime's side, as containerd's NRI adaptation sends it.
std::string call(uint32_t stream, const std::string& method, const std::string& payload,
                 const std::string& service = "nri.pkg.api.v1alpha1.Plugin") {
  ttrpc::Request request;
  request.set_service(service);
  request.set_method(method);
  request.set_payload(payload);
  return encodeTtrpcFrame(
      {MuxConn::kPluginService, stream, TtrpcType::kRequest, 0, request.SerializeAsString()});
}

ttrpc::Response onlyResponse(const std::string& bytes, uint32_t stream) {
  TtrpcFrameDecoder decoder;
  EXPECT_TRUE(decoder.feed(bytes).ok());
  EXPECT_TRUE(decoder.hasMessage());
  const TtrpcMessage message = decoder.takeMessage();
  EXPECT_FALSE(decoder.hasMessage());
  EXPECT_EQ(message.conn, MuxConn::kPluginService);
  EXPECT_EQ(message.stream_id, stream);
  EXPECT_EQ(message.type, TtrpcType::kResponse);
  ttrpc::Response response;
  EXPECT_TRUE(response.ParseFromString(message.payload));
  return response;
}

nriapi::ContainerAdjustment setsGidIndex(const nriapi::CreateContainerRequest& request) {
  nriapi::ContainerAdjustment adjust;
  auto* env = adjust.add_env();
  env->set_key("NCCL_IB_GID_INDEX");
  env->set_value(request.container().id() == "c1" ? "7" : "0");
  return adjust;
}

TEST(NriSession, RegistersOnTheRuntimesService) {
  const NriSession session("kube-rdma", "90", setsGidIndex);
  TtrpcFrameDecoder decoder;
  ASSERT_TRUE(decoder.feed(session.registration()).ok());
  const TtrpcMessage message = decoder.takeMessage();
  EXPECT_EQ(message.conn, MuxConn::kRuntimeService);
  EXPECT_EQ(message.stream_id, 1u);
  ttrpc::Request request;
  ASSERT_TRUE(request.ParseFromString(message.payload));
  EXPECT_EQ(request.service(), "nri.pkg.api.v1alpha1.Runtime");
  EXPECT_EQ(request.method(), "RegisterPlugin");
  nriapi::RegisterPluginRequest registration;
  ASSERT_TRUE(registration.ParseFromString(request.payload()));
  EXPECT_EQ(registration.plugin_name(), "kube-rdma");
  EXPECT_EQ(registration.plugin_idx(), "90");
}

TEST(NriSession, AsksForCreateContainerOnlyAndAnswersIt) {
  NriSession session("kube-rdma", "90", setsGidIndex);
  nriapi::ConfigureRequest configure;
  configure.set_runtime_name("containerd");
  configure.set_runtime_version("v2.4.2");
  auto answer = session.receive(call(1, "Configure", configure.SerializeAsString()));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  nriapi::ConfigureResponse configured;
  ASSERT_TRUE(configured.ParseFromString(onlyResponse(*answer, 1).payload()));
  EXPECT_EQ(configured.events(), 1 << 3); // CREATE_CONTAINER is event 4: bit 3
  EXPECT_TRUE(session.configured());
  EXPECT_EQ(session.runtime(), "containerd v2.4.2");

  nriapi::SynchronizeRequest sync;
  sync.set_more(true);
  answer = session.receive(call(3, "Synchronize", sync.SerializeAsString()));
  ASSERT_TRUE(answer.ok());
  nriapi::SynchronizeResponse synced;
  ASSERT_TRUE(synced.ParseFromString(onlyResponse(*answer, 3).payload()));
  EXPECT_TRUE(synced.more());
  EXPECT_EQ(synced.ByteSizeLong(), 2u); // nothing but `more`: no container is updated

  nriapi::CreateContainerRequest create;
  create.mutable_container()->set_id("c1");
  answer = session.receive(call(5, "CreateContainer", create.SerializeAsString()));
  ASSERT_TRUE(answer.ok());
  const ttrpc::Response created = onlyResponse(*answer, 5);
  EXPECT_EQ(created.status().code(), 0);
  nriapi::CreateContainerResponse adjusted;
  ASSERT_TRUE(adjusted.ParseFromString(created.payload()));
  ASSERT_EQ(adjusted.adjust().env_size(), 1);
  EXPECT_EQ(adjusted.adjust().env(0).value(), "7");
}

TEST(NriSession, TellsOfEveryPodTheRuntimeNames) {
  std::vector<std::string> seen;
  NriSession session("kube-rdma", "90", setsGidIndex, [&seen](const nriapi::PodSandbox& pod) {
    seen.push_back(pod.namespace_() + "/" + pod.name() + " " + pod.uid());
  });
  nriapi::SynchronizeRequest sync;
  for (const char* name : {"worker-0", "worker-1"}) {
    auto* pod = sync.add_pods();
    pod->set_namespace_("training");
    pod->set_name(name);
    pod->set_uid(std::string("uid-") + name);
  }
  ASSERT_TRUE(session.receive(call(3, "Synchronize", sync.SerializeAsString())).ok());
  nriapi::CreateContainerRequest create;
  create.mutable_pod()->set_namespace_("training");
  create.mutable_pod()->set_name("master-0");
  create.mutable_pod()->set_uid("uid-master-0");
  create.mutable_container()->set_id("c1");
  ASSERT_TRUE(session.receive(call(5, "CreateContainer", create.SerializeAsString())).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"training/worker-0 uid-worker-0",
                                            "training/worker-1 uid-worker-1",
                                            "training/master-0 uid-master-0"}));
}

TEST(NriSession, ABadCreateContainerIsNoAdjustmentNeverAnError) {
  NriSession session("kube-rdma", "90", setsGidIndex);
  auto answer = session.receive(call(5, "CreateContainer", "\xff\xff"));
  ASSERT_TRUE(answer.ok());
  const ttrpc::Response response = onlyResponse(*answer, 5);
  EXPECT_EQ(response.status().code(), 0);
  nriapi::CreateContainerResponse adjusted;
  ASSERT_TRUE(adjusted.ParseFromString(response.payload()));
  EXPECT_EQ(adjusted.adjust().env_size(), 0);
}

TEST(NriSession, UnknownCallsAreUnimplemented) {
  NriSession session("kube-rdma", "90", setsGidIndex);
  auto answer = session.receive(call(7, "StopContainer", "") + call(9, "Log", "", "other.Svc"));
  ASSERT_TRUE(answer.ok());
  TtrpcFrameDecoder decoder;
  ASSERT_TRUE(decoder.feed(*answer).ok());
  for (const std::string want :
       {"kube-rdma does not handle StopContainer", "no service other.Svc"}) {
    ASSERT_TRUE(decoder.hasMessage());
    ttrpc::Response response;
    ASSERT_TRUE(response.ParseFromString(decoder.takeMessage().payload));
    EXPECT_EQ(response.status().code(), 12);
    EXPECT_EQ(response.status().message(), want);
  }
}

TEST(NriSession, ARefusedRegistrationEndsTheConnectionSayingWhy) {
  NriSession session("kube-rdma", "90", setsGidIndex);
  ttrpc::Response refused;
  refused.mutable_status()->set_code(6);
  refused.mutable_status()->set_message("plugin with name kube-rdma already registered");
  auto answer = session.receive(encodeTtrpcFrame(
      {MuxConn::kRuntimeService, 1, TtrpcType::kResponse, 0, refused.SerializeAsString()}));
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().message, "the runtime refused to register plugin 90-kube-rdma: plugin "
                                    "with name kube-rdma already registered");
  ttrpc::Response accepted;
  EXPECT_TRUE(NriSession("kube-rdma", "90", setsGidIndex)
                  .receive(encodeTtrpcFrame({MuxConn::kRuntimeService, 1, TtrpcType::kResponse, 0,
                                             accepted.SerializeAsString()}))
                  .ok());
}

} // namespace
} // namespace kube_rdma
