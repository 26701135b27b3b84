#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "common/util/result.h"

// The bytes of an NRI connection. The runtime multiplexes two ttrpc connections over one unix
// socket: the plugin's service (conn 1, the runtime calls) and the runtime's (conn 2, the plugin
// calls). Each mux frame is the conn ID and a length, 4 bytes each, big-endian, then that many
// bytes of that connection's stream; a stream may be cut across frames anywhere. Each stream is
// ttrpc messages: length and stream ID (4 bytes each, big-endian), type and flags (1 byte each),
// then the payload, a protobuf ttrpc.Request or Response (docs/nri.md).
namespace kube_rdma {

enum class MuxConn : uint32_t { kPluginService = 1, kRuntimeService = 2 };

enum class TtrpcType : uint8_t { kRequest = 1, kResponse = 2, kData = 3 };

struct TtrpcMessage {
  MuxConn conn = MuxConn::kPluginService;
  uint32_t stream_id = 0;
  TtrpcType type = TtrpcType::kRequest;
  uint8_t flags = 0;
  std::string payload;
};

// ttrpc refuses a message longer than 4 MiB; so does the decoder.
inline constexpr uint32_t kTtrpcMessageMax = 4U << 20U;

// One mux frame carrying one whole ttrpc message.
std::string encodeTtrpcFrame(const TtrpcMessage& message);

// Bytes from the socket in, whole messages out.
class TtrpcFrameDecoder {
public:
  // An error (a message over 4 MiB, a conn ID other than 1 or 2) ends the connection: what
  // follows cannot be framed.
  Status feed(std::string_view bytes);
  bool hasMessage() const { return !ready_.empty(); }
  TtrpcMessage takeMessage();

private:
  Status drainStream(MuxConn conn);

  std::string trunk_;                     // mux frames not yet whole
  std::map<MuxConn, std::string> stream_; // each connection's ttrpc bytes not yet whole
  std::deque<TtrpcMessage> ready_;
};

} // namespace kube_rdma
