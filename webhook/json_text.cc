#include "webhook/json_text.h"

#include <charconv>
#include <cstddef>

namespace kube_rdma {
namespace {

using nlohmann::json;

// The length of the well-formed UTF-8 sequence at `p` (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0.
size_t utf8SequenceLength(const char* p, const char* end) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(p[i]); };
  const auto continuation = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return end - p > static_cast<std::ptrdiff_t>(i) && byte(i) >= lo && byte(i) <= hi;
  };
  const unsigned char c = byte(0);
  if (c >= 0xC2 && c <= 0xDF) {
    return continuation(1) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

// Escapes as nlohmann's serializer does with ensure_ascii off: the two-character forms, \u00xx in
// lower case for other control bytes, UTF-8 (validated) and DEL as they are.
void appendString(const std::string& text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  const char* p = text.data();
  const char* const end = p + text.size();
  const char* run = p; // bytes from here to `p` are copied as they are
  while ((p = skipPlainJsonBytes(p, end)) != end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x80) {
      size_t n = utf8SequenceLength(p, end);
      if (n == 0) {
        // Not UTF-8: dump() throws, naming the byte, as it would for the whole value.
        (void)json(text).dump();
        n = 1;
      }
      p += n;
      continue;
    }
    out.append(run, p);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
    run = ++p;
  }
  out.append(run, p);
  out += '"';
}

template <typename Integer> void appendInteger(Integer value, std::string& out) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  out.append(digits, end);
}

} // namespace

void appendJsonText(const json& value, std::string& out) {
  switch (value.type()) {
  case json::value_t::object: {
    out += '{';
    bool first = true;
    for (const auto& [key, member] : value.get_ref<const json::object_t&>()) {
      out += first ? "" : ",";
      first = false;
      appendString(key, out);
      out += ':';
      appendJsonText(member, out);
    }
    out += '}';
    return;
  }
  case json::value_t::array: {
    out += '[';
    bool first = true;
    for (const auto& element : value.get_ref<const json::array_t&>()) {
      out += first ? "" : ",";
      first = false;
      appendJsonText(element, out);
    }
    out += ']';
    return;
  }
  case json::value_t::string:
    appendString(value.get_ref<const std::string&>(), out);
    return;
  case json::value_t::boolean:
    out += value.get<bool>() ? "true" : "false";
    return;
  case json::value_t::number_integer:
    appendInteger(value.get<json::number_integer_t>(), out);
    return;
  case json::value_t::number_unsigned:
    appendInteger(value.get<json::number_unsigned_t>(), out);
    return;
  case json::value_t::null:
    out += "null";
    return;
  default: // floating point, binary, discarded: rare in a patch, and dump() knows their forms
    out += value.dump();
    return;
  }
}

} // namespace kube_rdma
