#include "webhook/shorthand.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

constexpr std::string_view kFullWidthOpen = "\xEF\xBC\x88";  // U+FF08 （
constexpr std::string_view kFullWidthClose = "\xEF\xBC\x89"; // U+FF09 ）
constexpr std::string_view kForms = "expected N, N(ib) or N(roce)";
constexpr std::string_view kTypeChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";

// Consumes an opening or closing bracket, ASCII or full-width.
bool consumeBracket(std::string_view& s, char ascii, std::string_view full_width) {
  if (!s.empty() && s.front() == ascii) {
    s.remove_prefix(1);
    return true;
  }
  if (s.substr(0, full_width.size()) == full_width) {
    s.remove_prefix(full_width.size());
    return true;
  }
  return false;
}

Error invalid(std::string_view text, const std::string& why) {
  return makeError("invalid RDMA shorthand \"" + std::string(text) + "\": " + why);
}

} // namespace

ShorthandMap defaultShorthandMap() {
  return ShorthandMap{{{"ib", "rdma/hca"}, {"roce", "rdma/shared"}}, "rdma/hca"};
}

Result<Shorthand> parseShorthand(std::string_view text) {
  std::string_view rest = trimmedView(text);
  if (rest.empty()) {
    return invalid(text, "empty value, " + std::string(kForms));
  }
  if (rest.front() == '-') {
    return invalid(text, "the count must be at least 1, got a negative number");
  }
  const size_t digits = std::min(rest.find_first_not_of("0123456789"), rest.size());
  if (digits == 0) {
    return invalid(text, "missing the count, " + std::string(kForms));
  }
  const std::string_view number = rest.substr(0, digits);
  rest.remove_prefix(digits);
  if (!rest.empty() && (rest.front() == '.' || rest.front() == ',')) {
    return invalid(text, "the count must be a whole number");
  }

  uint32_t count = 0;
  // Only digits reach it, so its one possible error is a count beyond uint32_t.
  if (std::from_chars(number.data(), number.data() + number.size(), count).ec != std::errc{} ||
      count > kMaxShorthandCount) {
    return invalid(text, "the count " + std::string(number) + " is too large (at most " +
                             std::to_string(kMaxShorthandCount) + ")");
  }
  if (count == 0) {
    return invalid(text, "the count must be at least 1 (leave the annotation out for no RDMA)");
  }

  Shorthand out{count, ""};
  if (rest.empty()) {
    return out;
  }
  if (!consumeBracket(rest, '(', kFullWidthOpen)) {
    return invalid(text, "unexpected \"" + std::string(rest) + "\" after the count, " +
                             std::string(kForms));
  }
  const size_t type_len = std::min(rest.find_first_not_of(kTypeChars), rest.size());
  if (type_len == 0) {
    return invalid(text, "missing the type between the brackets, " + std::string(kForms));
  }
  for (char c : rest.substr(0, type_len)) {
    out.type += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  rest.remove_prefix(type_len);
  if (!consumeBracket(rest, ')', kFullWidthClose)) {
    return invalid(text, "missing \")\" after the type");
  }
  if (!rest.empty()) {
    return invalid(text, "unexpected \"" + std::string(rest) + "\" after \")\"");
  }
  return out;
}

Result<ShorthandRequest> resolveShorthand(std::string_view text, const ShorthandMap& map) {
  auto parsed = parseShorthand(text);
  if (!parsed) {
    return parsed.error();
  }
  if (parsed->type.empty()) {
    return ShorthandRequest{parsed->count, map.untyped};
  }
  auto it = map.by_type.find(parsed->type);
  if (it == map.by_type.end()) {
    std::string known;
    for (const auto& [type, resource] : map.by_type) {
      known += (known.empty() ? "\"" : ", \"") + type + "\"";
    }
    return invalid(text, "unknown type \"" + parsed->type + "\" (known: " + known + ")");
  }
  return ShorthandRequest{parsed->count, it->second};
}

} // namespace kube_rdma
