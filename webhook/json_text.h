#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

namespace kube_rdma {

// The first byte at or after `p` that a JSON string cannot hold as it is ('"', '\\', a control
// byte) or that is not ASCII (UTF-8 to check), else `end`: most of a pod's text is plain ASCII,
// tested eight bytes at a time (the bit tricks of "Determine if a word has a byte less than n",
// exact for whether any byte matches).
inline const char* skipPlainJsonBytes(const char* p, const char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHigh = 0x8080808080808080;
  for (; end - p >= 8; p += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p, sizeof(word));
    const uint64_t quote = word ^ (kOnes * '"');
    const uint64_t backslash = word ^ (kOnes * '\\');
    const uint64_t control = (word - kOnes * 0x20) & ~word;
    if (((control | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | word) &
         kHigh) != 0) {
      break;
    }
  }
  for (; p != end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      break;
    }
  }
  return p;
}

// Appends `value` as compact JSON text, byte for byte what value.dump() gives, at a fraction of
// its cost: runs of bytes that need no escaping are copied whole instead of passing one by one
// through nlohmann's UTF-8 checker. Throws what dump() throws for a string that is not UTF-8.
void appendJsonText(const nlohmann::json& value, std::string& out);

} // namespace kube_rdma
