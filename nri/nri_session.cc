#include "nri/nri_session.h"

#include <algorithm>
#include <utility>

#include "ttrpc/request.pb.h"

namespace kube_rdma {
namespace {

constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";
constexpr const char* kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
// The plugin's first call is stream 1 (a ttrpc client numbers its streams 1, 3, 5, ...).
constexpr uint32_t kRegistrationStream = 1;
// gRPC's status codes, which ttrpc uses.
constexpr int kUnimplemented = 12;

// The bit of ConfigureResponse.events for `event`.
int32_t eventBit(nriapi::Event event) {
  return 1 << (static_cast<int>(event) - 1);
}

TtrpcMessage responseTo(const TtrpcMessage& request, int code, const std::string& message,
                        const std::string& payload) {
  ttrpc::Response response;
  response.mutable_status()->set_code(code);
  response.mutable_status()->set_message(message);
  response.set_payload(payload);
  return {request.conn, request.stream_id, TtrpcType::kResponse, 0, response.SerializeAsString()};
}

} // namespace

NriSession::NriSession(std::string plugin_name, std::string plugin_index,
                       CreateContainerHandler handler, PodSeenHandler on_pod)
    : plugin_name_(std::move(plugin_name)), plugin_index_(std::move(plugin_index)),
      handler_(std::move(handler)), on_pod_(std::move(on_pod)) {}

std::string NriSession::registration() const {
  nriapi::RegisterPluginRequest registration;
  registration.set_plugin_name(plugin_name_);
  registration.set_plugin_idx(plugin_index_);
  ttrpc::Request request;
  request.set_service(kRuntimeService);
  request.set_method("RegisterPlugin");
  request.set_payload(registration.SerializeAsString());
  return encodeTtrpcFrame({MuxConn::kRuntimeService, kRegistrationStream, TtrpcType::kRequest, 0,
                           request.SerializeAsString()});
}

Result<std::string> NriSession::receive(std::string_view bytes) {
  if (auto fed = decoder_.feed(bytes); !fed) {
    return fed.error();
  }
  std::string out;
  while (decoder_.hasMessage()) {
    const TtrpcMessage message = decoder_.takeMessage();
    if (message.conn == MuxConn::kRuntimeService) {
      if (auto answer = readRegistrationAnswer(message); !answer) {
        return answer.error();
      }
      continue;
    }
    auto answer = answerRuntimeCall(message);
    if (!answer) {
      return answer.error();
    }
    out += *answer;
  }
  return out;
}

Status NriSession::readRegistrationAnswer(const TtrpcMessage& message) const {
  ttrpc::Response response;
  if (message.type != TtrpcType::kResponse || message.stream_id != kRegistrationStream ||
      !response.ParseFromString(message.payload)) {
    return makeError("the runtime's service sent something other than the answer to "
                     "RegisterPlugin (ttrpc type " +
                     std::to_string(static_cast<int>(message.type)) + ", stream " +
                     std::to_string(message.stream_id) + ")");
  }
  if (response.status().code() != 0) {
    return makeError("the runtime refused to register plugin " + plugin_index_ + "-" +
                     plugin_name_ + ": " + response.status().message());
  }
  return Ok{};
}

Result<std::string> NriSession::answerRuntimeCall(const TtrpcMessage& message) {
  ttrpc::Request request;
  if (message.type != TtrpcType::kRequest || !request.ParseFromString(message.payload)) {
    return makeError("the runtime sent a ttrpc message of type " +
                     std::to_string(static_cast<int>(message.type)) +
                     " that is not a request on the plugin's service");
  }
  const std::string& method = request.method();
  if (request.service() != kPluginService) {
    return encodeTtrpcFrame(
        responseTo(message, kUnimplemented, "no service " + request.service(), ""));
  }
  if (method == "Configure") {
    nriapi::ConfigureRequest configure;
    if (!configure.ParseFromString(request.payload())) {
      return makeError("the runtime's Configure does not parse");
    }
    runtime_ = configure.runtime_name() + " " + configure.runtime_version();
    nriapi::ConfigureResponse reply;
    reply.set_events(eventBit(nriapi::CREATE_CONTAINER));
    return encodeTtrpcFrame(responseTo(message, 0, "", reply.SerializeAsString()));
  }
  if (method == "Synchronize") {
    // The containers that already run keep what they have; only new ones are adjusted.
    nriapi::SynchronizeRequest sync;
    nriapi::SynchronizeResponse reply;
    const bool parsed = sync.ParseFromString(request.payload());
    reply.set_more(parsed && sync.more());
    if (parsed && on_pod_) {
      std::ranges::for_each(sync.pods(), on_pod_);
    }
    return encodeTtrpcFrame(responseTo(message, 0, "", reply.SerializeAsString()));
  }
  if (method == "CreateContainer") {
    // Never an error status here: the runtime would fail the container for it.
    nriapi::CreateContainerRequest create;
    nriapi::CreateContainerResponse reply;
    if (create.ParseFromString(request.payload())) {
      if (on_pod_) {
        on_pod_(create.pod());
      }
      *reply.mutable_adjust() = handler_(create);
    }
    return encodeTtrpcFrame(responseTo(message, 0, "", reply.SerializeAsString()));
  }
  if (method == "Shutdown") {
    return encodeTtrpcFrame(responseTo(message, 0, "", nriapi::Empty().SerializeAsString()));
  }
  return encodeTtrpcFrame(
      responseTo(message, kUnimplemented, "kube-rdma does not handle " + method, ""));
}

} // namespace kube_rdma
