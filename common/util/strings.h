#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kube_rdma {

// `text` as a number when all of it is one, by std::from_chars: no spaces, no '+', no '-' for
// unsigned T, no "0x" for base 16. A template, so in the header.
template <class T> std::optional<T> parseWhole(std::string_view text, int base = 10) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, value, base);
  if (ec != std::errc() || p != end) { // from_chars rejects an empty text too
    return std::nullopt;
  }
  return value;
}

// `text` in double quotes, for naming a value in a message.
inline std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// "a,b,c" from {"a", "b", "c"} with separator ","; "" for no items. For lists in messages,
// logs and environment values.
std::string joinStrings(const std::vector<std::string>& items, std::string_view separator);

// `text` without leading and trailing spaces, tabs, newlines and carriage returns: a view into
// `text` (no copy, for the admission path), or a string of its own.
inline std::string_view trimmedView(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r";
  const size_t begin = text.find_first_not_of(kSpace);
  return begin == std::string_view::npos
             ? std::string_view()
             : text.substr(begin, text.find_last_not_of(kSpace) - begin + 1);
}
inline std::string trimmed(std::string_view text) {
  return std::string(trimmedView(text));
}

// Whether `value` is one of `list`: the short lists of config keys, policy keys and netdevs.
bool listContains(const std::vector<std::string>& list, std::string_view value);

} // namespace kube_rdma
