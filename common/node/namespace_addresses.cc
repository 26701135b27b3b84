#include "common/node/namespace_addresses.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

// fib_trie of a host with a full BGP table runs to tens of MiB; a node's is far smaller.
constexpr size_t kMaxProcNetBytes = size_t{64} * 1024 * 1024;

// Calls on_line(number, line) for each line, 1-based; stops at the first error.
template <class F> Status forEachLine(std::string_view text, F&& on_line) {
  size_t number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (auto st = on_line(++number, line); !st) {
      return st;
    }
  }
  return Ok{};
}

NamespaceAddresses sortedUnique(NamespaceAddresses addresses) {
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  return addresses;
}

} // namespace

Result<NamespaceAddresses> parseFibTrieAddresses(std::string_view text) {
  NamespaceAddresses out;
  Gid leaf;
  bool in_leaf = false;
  auto st = forEachLine(text, [&](size_t number, std::string_view line) -> Status {
    const std::string_view content = trimmedView(line);
    if (content.starts_with("|-- ")) {
      const std::string address(trimmedView(content.substr(4)));
      leaf = Gid{};
      leaf.bytes[10] = leaf.bytes[11] = 0xff; // ::ffff:a.b.c.d, as the kernel writes IPv4 GIDs
      in_leaf = inet_pton(AF_INET, address.c_str(), leaf.bytes.data() + 12) == 1;
      if (!in_leaf) {
        return lineError("fib_trie", number,
                         kube_rdma::quoted(address) + " is not an IPv4 address");
      }
    } else if (content.starts_with("/")) {
      // "/32 host LOCAL": the route the kernel adds for an address of this namespace.
      if (in_leaf && content.starts_with("/32 ") && content.ends_with(" LOCAL")) {
        out.push_back(leaf);
      }
    } else {
      in_leaf = false; // "+-- prefix/len ..." nodes and the table names
    }
    return Ok{};
  });
  if (!st) {
    return st.error();
  }
  return sortedUnique(std::move(out));
}

Result<NamespaceAddresses> parseIfInet6Addresses(std::string_view text) {
  NamespaceAddresses out;
  auto st = forEachLine(text, [&](size_t number, std::string_view line) -> Status {
    const std::string_view content = trimmedView(line);
    if (content.empty()) {
      return Ok{};
    }
    const std::string_view hex = content.substr(0, content.find(' '));
    Gid gid;
    bool ok = hex.size() == 32;
    for (size_t i = 0; ok && i < 16; ++i) {
      const auto byte = parseWhole<unsigned>(hex.substr(2 * i, 2), 16);
      ok = byte.has_value() && hex[2 * i] != '+' && hex[2 * i] != '-';
      gid.bytes[i] = static_cast<uint8_t>(byte.value_or(0));
    }
    if (!ok) {
      return lineError("if_inet6", number,
                       kube_rdma::quoted(hex) + " is not 32 hexadecimal digits");
    }
    out.push_back(gid);
    return Ok{};
  });
  if (!st) {
    return st.error();
  }
  return sortedUnique(std::move(out));
}

Result<NamespaceAddresses> readNamespaceAddresses(const std::string& proc_root) {
  const std::string fib_trie = proc_root + "/net/fib_trie";
  auto text = readAttribute(fib_trie, kMaxProcNetBytes);
  if (!text) {
    return text.error();
  }
  auto addresses = parseFibTrieAddresses(*text);
  if (!addresses) {
    return makeError(fib_trie + ": " + addresses.error().message);
  }
  const std::string if_inet6 = proc_root + "/net/if_inet6";
  std::error_code ec;
  if (!std::filesystem::exists(if_inet6, ec)) {
    return addresses;
  }
  auto text6 = readAttribute(if_inet6, kMaxProcNetBytes);
  if (!text6) {
    return text6.error();
  }
  auto addresses6 = parseIfInet6Addresses(*text6);
  if (!addresses6) {
    return makeError(if_inet6 + ": " + addresses6.error().message);
  }
  addresses->insert(addresses->end(), addresses6->begin(), addresses6->end());
  return sortedUnique(std::move(*addresses));
}

bool containsAddress(const NamespaceAddresses& addresses, const Gid& gid) {
  return std::binary_search(addresses.begin(), addresses.end(), gid);
}

} // namespace kube_rdma
