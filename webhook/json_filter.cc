#include "webhook/json_filter.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "webhook/json_text.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

// A recursive-descent parser that accepts exactly what nlohmann::json::parse accepts (RFC 8259,
// well-formed UTF-8, paired surrogates, a leading UTF-8 BOM, no comments, finite numbers) and
// builds the same values, but only for what the filter keeps. Dropped values are validated
// without allocating: nlohmann's lexer copied every byte twice (token string and buffer), which
// was most of the cost of a review. Recursion is bounded by max_depth.
class FilteringParser {
public:
  FilteringParser(std::string_view text, size_t max_depth)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()),
        max_depth_(max_depth) {}

  Result<json> parse(const JsonFilter& filter) {
    json root;
    if (end_ - p_ >= 3 && std::string_view(p_, 3) == "\xEF\xBB\xBF") {
      p_ += 3;
    }
    if (value(&filter, &root, 0) && (skipSpace(), p_ == end_)) {
      return root;
    }
    if (too_deep_) {
      return makeError("nests deeper than " + std::to_string(max_depth_) + " levels");
    }
    // Where parsing stopped: the offending byte, or the end of a text that stops too early.
    const auto at = std::to_string(p_ - begin_);
    const auto size = std::to_string(end_ - begin_);
    return makeError(p_ == end_ ? "not JSON: the text ends early (byte " + at + " of " + size + ")"
                                : "not JSON: unexpected byte at offset " + at + " of " + size);
  }

private:
  void skipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
    }
  }

  bool consume(char c) {
    skipSpace();
    if (p_ != end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // `out` nullptr: validate only.
  bool value(const JsonFilter* filter, json* out, size_t depth) {
    skipSpace();
    if (p_ == end_) {
      return false;
    }
    switch (*p_) {
    case '{':
      return object(filter, out, depth + 1);
    case '[':
      return array(filter, out, depth + 1);
    case '"': {
      std::string_view text;
      if (!string(text, out != nullptr)) {
        return false;
      }
      if (out != nullptr) {
        *out = std::string(text);
      }
      return true;
    }
    case 't':
      return literal("true", out, json(true));
    case 'f':
      return literal("false", out, json(false));
    case 'n':
      return literal("null", out, json(nullptr));
    default:
      return number(out);
    }
  }

  // At the '{' or '[' of a container at `depth`: whether it may be read, and whether it is
  // already closed (empty).
  bool open(json* out, json::value_t type, size_t depth, bool& empty) {
    if (depth > max_depth_) {
      too_deep_ = true;
      return false;
    }
    ++p_;
    if (out != nullptr) {
      *out = json(type);
    }
    empty = consume(type == json::value_t::object ? '}' : ']');
    return true;
  }

  bool object(const JsonFilter* filter, json* out, size_t depth) {
    bool empty = false;
    if (!open(out, json::value_t::object, depth, empty) || empty) {
      return empty;
    }
    do {
      skipSpace();
      std::string_view key;
      if (p_ == end_ || *p_ != '"' || !string(key, out != nullptr) || !consume(':')) {
        return false;
      }
      const JsonFilter* child = out != nullptr ? filter->member(key) : nullptr;
      json* slot = child != nullptr ? &(*out)[std::string(key)] : nullptr;
      if (!value(child, slot, depth)) {
        return false;
      }
    } while (consume(','));
    return consume('}');
  }

  bool array(const JsonFilter* filter, json* out, size_t depth) {
    bool empty = false;
    if (!open(out, json::value_t::array, depth, empty) || empty) {
      return empty;
    }
    do {
      // Every element is kept: indices stay those of the document. The element does not move
      // while it is filled, nothing else is added to this array meanwhile.
      if (!value(filter, out != nullptr ? &out->emplace_back() : nullptr, depth)) {
        return false;
      }
    } while (consume(','));
    return consume(']');
  }

  bool literal(std::string_view word, json* out, json parsed) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    if (out != nullptr) {
      *out = std::move(parsed);
    }
    return true;
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  // nlohmann's rules: integers as int64 (negative) or uint64 when they fit, otherwise (and for
  // fractions and exponents) a double that must be finite.
  bool number(json* out) {
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') {
      ++p_;
    }
    if (p_ == end_ || !isDigit(*p_)) {
      return false;
    }
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && isDigit(*p_)) {
        ++p_;
      }
    }
    bool integer = true;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_ || !isDigit(*p_)) {
        return false;
      }
      while (p_ != end_ && isDigit(*p_)) {
        ++p_;
      }
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
        ++p_;
      }
      if (p_ == end_ || !isDigit(*p_)) {
        return false;
      }
      while (p_ != end_ && isDigit(*p_)) {
        ++p_;
      }
    }
    scratch_.assign(start, p_); // strto* need a terminated string
    errno = 0;
    if (integer && *start == '-') {
      const long long n = std::strtoll(scratch_.c_str(), nullptr, 10);
      if (errno == 0) {
        return store(out, json::number_integer_t{n});
      }
    } else if (integer) {
      const unsigned long long n = std::strtoull(scratch_.c_str(), nullptr, 10);
      if (errno == 0) {
        return store(out, json::number_unsigned_t{n});
      }
    }
    const double d = std::strtod(scratch_.c_str(), nullptr);
    return std::isfinite(d) && store(out, d);
  }

  template <class T> static bool store(json* out, T value) {
    if (out != nullptr) {
      *out = value;
    }
    return true;
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }

  // After "\u": four hex digits.
  bool hex4(unsigned& code) {
    if (end_ - p_ < 4) {
      return false;
    }
    code = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = hexDigit(*p_++);
      if (digit < 0) {
        return false;
      }
      code = code * 16 + static_cast<unsigned>(digit);
    }
    return true;
  }

  // A well-formed UTF-8 sequence starting at p_ (a byte >= 0x80), as RFC 3629 table 3-7.
  bool utf8Sequence() {
    const auto byte = [this](size_t i) { return static_cast<unsigned char>(p_[i]); };
    const unsigned char lead = byte(0);
    size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      low = lead == 0xE0 ? 0xA0 : 0x80;
      high = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      low = lead == 0xF0 ? 0x90 : 0x80;
      high = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (static_cast<size_t>(end_ - p_) < length || byte(1) < low || byte(1) > high) {
      return false;
    }
    for (size_t i = 2; i < length; ++i) {
      if (byte(i) < 0x80 || byte(i) > 0xBF) {
        return false;
      }
    }
    p_ += length;
    return true;
  }

  static void appendUtf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  // At the opening quote. `text` is the decoded string: a view of the input when it has no
  // escapes, of scratch_ otherwise (valid until the next string); only when `decode`.
  bool string(std::string_view& text, bool decode) {
    const char* start = ++p_;
    bool escaped = false;
    while (true) {
      const char* run = p_;
      p_ = skipPlainJsonBytes(p_, end_);
      if (escaped && decode) {
        scratch_.append(run, p_);
      }
      if (p_ == end_) {
        return false;
      }
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        break;
      }
      if (c < 0x20) {
        return false;
      }
      if (c == '\\') {
        if (!escaped && decode) {
          scratch_.assign(start, p_);
        }
        escaped = true;
        if (!escape(decode)) {
          return false;
        }
      } else { // c >= 0x80
        const char* sequence = p_;
        if (!utf8Sequence()) {
          return false;
        }
        if (escaped && decode) {
          scratch_.append(sequence, p_);
        }
      }
    }
    if (decode) {
      text = escaped ? std::string_view(scratch_) : std::string_view(start, p_ - start);
    }
    ++p_;
    return true;
  }

  // At a backslash inside a string.
  bool escape(bool decode) {
    if (++p_ == end_) {
      return false;
    }
    char decoded = 0;
    switch (*p_++) {
    case '"':
      decoded = '"';
      break;
    case '\\':
      decoded = '\\';
      break;
    case '/':
      decoded = '/';
      break;
    case 'b':
      decoded = '\b';
      break;
    case 'f':
      decoded = '\f';
      break;
    case 'n':
      decoded = '\n';
      break;
    case 'r':
      decoded = '\r';
      break;
    case 't':
      decoded = '\t';
      break;
    case 'u': {
      unsigned code = 0;
      if (!hex4(code) || (code >= 0xDC00 && code <= 0xDFFF)) {
        return false;
      }
      if (code >= 0xD800 && code <= 0xDBFF) {
        unsigned low = 0;
        if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
          return false;
        }
        p_ += 2;
        if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) {
          return false;
        }
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      if (decode) {
        appendUtf8(scratch_, code);
      }
      return true;
    }
    default:
      return false;
    }
    if (decode) {
      scratch_ += decoded;
    }
    return true;
  }

  const char* const begin_;
  const char* p_;
  const char* const end_;
  const size_t max_depth_;
  bool too_deep_ = false;
  std::string scratch_; // escaped strings and number text
};

} // namespace

const JsonFilter* JsonFilter::member(std::string_view key) const {
  if (keep_all_) {
    return this;
  }
  for (const auto& [name, filter] : members_) {
    if (name == key) {
      return &filter;
    }
  }
  return nullptr;
}

Result<nlohmann::json> parseFiltered(std::string_view text, const JsonFilter& filter,
                                     size_t max_depth) {
  return FilteringParser(text, max_depth).parse(filter);
}

} // namespace kube_rdma
