#include "nri/ttrpc_frames.h"

#include <utility>

namespace kube_rdma {
namespace {

constexpr size_t kMuxHeader = 8;
constexpr size_t kTtrpcHeader = 10;

void putBigEndian(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xFFU));
  }
}

uint32_t bigEndianAt(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value = (value << 8U) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

} // namespace

std::string encodeTtrpcFrame(const TtrpcMessage& message) {
  std::string out;
  out.reserve(kMuxHeader + kTtrpcHeader + message.payload.size());
  putBigEndian(out, static_cast<uint32_t>(message.conn));
  putBigEndian(out, static_cast<uint32_t>(kTtrpcHeader + message.payload.size()));
  putBigEndian(out, static_cast<uint32_t>(message.payload.size()));
  putBigEndian(out, message.stream_id);
  out.push_back(static_cast<char>(message.type));
  out.push_back(static_cast<char>(message.flags));
  out += message.payload;
  return out;
}

Status TtrpcFrameDecoder::feed(std::string_view bytes) {
  trunk_ += bytes;
  size_t at = 0;
  while (trunk_.size() - at >= kMuxHeader) {
    const uint32_t id = bigEndianAt(trunk_, at);
    const uint32_t length = bigEndianAt(trunk_, at + 4);
    if (id != static_cast<uint32_t>(MuxConn::kPluginService) &&
        id != static_cast<uint32_t>(MuxConn::kRuntimeService)) {
      return makeError("NRI frame for connection " + std::to_string(id) +
                       ", not the plugin's (1) or the runtime's (2)");
    }
    if (length > kTtrpcHeader + kTtrpcMessageMax) {
      return makeError("NRI frame of " + std::to_string(length) + " bytes, more than ttrpc's " +
                       std::to_string(kTtrpcHeader + kTtrpcMessageMax));
    }
    if (trunk_.size() - at - kMuxHeader < length) {
      break;
    }
    const auto conn = static_cast<MuxConn>(id);
    stream_[conn].append(trunk_, at + kMuxHeader, length);
    at += kMuxHeader + length;
    if (auto drained = drainStream(conn); !drained) {
      return drained;
    }
  }
  trunk_.erase(0, at);
  return Ok{};
}

Status TtrpcFrameDecoder::drainStream(MuxConn conn) {
  std::string& bytes = stream_[conn];
  size_t at = 0;
  while (bytes.size() - at >= kTtrpcHeader) {
    const uint32_t length = bigEndianAt(bytes, at);
    if (length > kTtrpcMessageMax) {
      return makeError("ttrpc message of " + std::to_string(length) + " bytes, more than " +
                       std::to_string(kTtrpcMessageMax));
    }
    if (bytes.size() - at - kTtrpcHeader < length) {
      break;
    }
    TtrpcMessage message;
    message.conn = conn;
    message.stream_id = bigEndianAt(bytes, at + 4);
    message.type = static_cast<TtrpcType>(static_cast<unsigned char>(bytes[at + 8]));
    message.flags = static_cast<uint8_t>(bytes[at + 9]);
    message.payload = bytes.substr(at + kTtrpcHeader, length);
    ready_.push_back(std::move(message));
    at += kTtrpcHeader + length;
  }
  bytes.erase(0, at);
  return Ok{};
}

TtrpcMessage TtrpcFrameDecoder::takeMessage() {
  TtrpcMessage message = std::move(ready_.front());
  ready_.pop_front();
  return message;
}

} // namespace kube_rdma
