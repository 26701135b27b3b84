#include "common/node/sysfs_attributes.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/util/strings.h"

namespace kube_rdma {
namespace {

std::string_view stripNewline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') {
    text.remove_suffix(1);
  }
  return text;
}

// Closes the descriptor on every path out of readFd.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// Reads until EOF, or once when `single_read`: sysfs serves an attribute's whole text (at most a
// page) in its first read, so a second read() would only return 0.
Result<std::string> readFd(int fd, const std::string& what, size_t max_bytes, bool single_read) {
  const FdCloser closer{fd};
  std::string out;
  char buf[kMaxAttributeBytes + 1];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return makeError("cannot read " + what + ": " + std::strerror(errno));
    }
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return makeError(what + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
    if (n == 0 || (single_read && static_cast<size_t>(n) < sizeof(buf))) {
      break;
    }
  }
  out.resize(stripNewline(out).size());
  return out;
}

// "<number>: <name>" as the kernel's "%d: %s".
Result<std::pair<int, std::string_view>> parseNumberedName(std::string_view text,
                                                           const char* what) {
  text = stripNewline(text);
  const size_t colon = text.find(": ");
  int number = 0;
  if (colon == std::string_view::npos || colon == 0) {
    return makeError(std::string(what) + " " + quoted(text) + " is not \"<number>: <name>\"");
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + colon, number);
  if (ec != std::errc() || end != text.data() + colon) {
    return makeError(std::string(what) + " " + quoted(text) + " does not start with a number");
  }
  return std::pair<int, std::string_view>{number, text.substr(colon + 2)};
}

} // namespace

Result<std::string> readAttribute(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return makeError("cannot open " + path + ": " + std::strerror(errno));
  }
  return readFd(fd, path, max_bytes, false);
}

std::vector<std::string> listDirectory(const std::string& dir) {
  return listDirectoryAt(AT_FDCWD, dir.c_str()).value_or(std::vector<std::string>{});
}

std::optional<std::vector<std::string>> listDirectoryAt(int dir_fd, const char* name) {
  DIR* dir = ::fdopendir(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir == nullptr) {
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      names.emplace_back(entry->d_name);
    }
  }
  ::closedir(dir);
  return names;
}

Result<std::string> readAttributeAt(int dir_fd, const char* name) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return makeError(std::string("cannot open ") + name + ": " + std::strerror(errno));
  }
  return readFd(fd, name, kMaxAttributeBytes, true);
}

Result<PortState> parsePortState(std::string_view text) {
  auto parsed = parseNumberedName(text, "port state");
  if (!parsed) {
    return parsed.error();
  }
  const auto [number, name] = *parsed;
  if (number < 0 || number > 5) {
    return makeError("port state " + quoted(stripNewline(text)) + ": " + std::to_string(number) +
                     " is not an ibv_port_state (0..5)");
  }
  const auto state = static_cast<PortState>(number);
  if (name != toString(state)) {
    return makeError("port state " + quoted(stripNewline(text)) + ": state " +
                     std::to_string(number) + " is " + toString(state) + ", not " +
                     std::string(name));
  }
  return state;
}

Result<PhysState> parsePhysState(std::string_view text) {
  auto parsed = parseNumberedName(text, "physical port state");
  if (!parsed) {
    return parsed.error();
  }
  const auto [number, name] = *parsed;
  if (number < 0 || name.empty()) {
    return makeError("physical port state " + quoted(stripNewline(text)) +
                     " needs a non-negative number and a name");
  }
  return PhysState{number, std::string(name)};
}

Result<LinkLayer> parseLinkLayer(std::string_view text) {
  text = stripNewline(text);
  for (const auto layer : {LinkLayer::kInfiniBand, LinkLayer::kEthernet, LinkLayer::kUnknown}) {
    if (text == toString(layer)) { // toString spells them as the kernel does
      return layer;
    }
  }
  return makeError("link layer " + quoted(text) + " is not InfiniBand, Ethernet or Unknown");
}

Result<uint32_t> parseRateGbps(std::string_view text) {
  text = stripNewline(text);
  uint32_t gbps = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, gbps);
  if (ec != std::errc() || p == text.data()) {
    return makeError("rate " + quoted(text) + " does not start with a number of Gb/sec");
  }
  std::string_view rest(p, static_cast<size_t>(end - p));
  if (rest.size() >= 2 && rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9') {
    rest.remove_prefix(2); // the kernel's ".5" of 2.5 / 12.5 / 62.5 Gb/sec
  }
  if (rest.substr(0, 8) != " Gb/sec ") {
    return makeError("rate " + quoted(text) + " is not \"<n> Gb/sec (<width>X <speed>)\"");
  }
  return gbps;
}

Result<uint32_t> parseLid(std::string_view text) {
  text = stripNewline(text);
  if (text.substr(0, 2) != "0x" || text.size() == 2) {
    return makeError("LID " + quoted(text) + " is not hexadecimal \"0x...\"");
  }
  const auto lid = parseWhole<uint32_t>(text.substr(2), 16);
  if (!lid || *lid > 0xffff) {
    return makeError("LID " + quoted(text) + " is not a 16-bit hexadecimal number");
  }
  return *lid;
}

Result<std::optional<int>> parseNumaNode(std::string_view text) {
  text = stripNewline(text);
  const auto node = parseWhole<int>(text);
  if (!node) {
    return makeError("NUMA node " + quoted(text) + " is not a number");
  }
  if (*node == -1) {
    return std::optional<int>();
  }
  if (*node < 0) {
    return makeError("NUMA node " + quoted(text) + " is negative but not -1");
  }
  return node;
}

Result<GidType> parseGidType(std::string_view text) {
  text = stripNewline(text);
  if (text == "IB/RoCE v1" || text == "RoCE v1") {
    return GidType::kRoceV1;
  }
  if (text == "RoCE v2") {
    return GidType::kRoceV2;
  }
  return makeError("GID type " + quoted(text) + " is not \"IB/RoCE v1\" or \"RoCE v2\"");
}

Result<Gid> parseGid(std::string_view text) {
  text = stripNewline(text);
  if (text.size() >= INET6_ADDRSTRLEN) {
    return makeError("GID " + quoted(text) + " is too long for an IPv6 address");
  }
  char buf[INET6_ADDRSTRLEN];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  Gid gid;
  if (::inet_pton(AF_INET6, buf, gid.bytes.data()) != 1) {
    return makeError("GID " + quoted(text) + " is not an IPv6-form GID");
  }
  return gid;
}

std::string toKernelText(const Gid& gid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(39);
  for (size_t i = 0; i < gid.bytes.size(); ++i) {
    if (i > 0 && i % 2 == 0) {
      out.push_back(':');
    }
    out.push_back(kHex[gid.bytes[i] >> 4]);
    out.push_back(kHex[gid.bytes[i] & 0xf]);
  }
  return out;
}

bool isZero(const Gid& gid) {
  return gid == Gid{};
}

bool isLinkLocal(const Gid& gid) {
  return gid.bytes[0] == 0xfe && gid.bytes[1] == 0x80 && gid.bytes[2] == 0 && gid.bytes[3] == 0 &&
         gid.bytes[4] == 0 && gid.bytes[5] == 0 && gid.bytes[6] == 0 && gid.bytes[7] == 0;
}

std::optional<std::string> ipv4Of(const Gid& gid) {
  static constexpr uint8_t kMappedPrefix[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!std::equal(std::begin(kMappedPrefix), std::end(kMappedPrefix), gid.bytes.begin())) {
    return std::nullopt;
  }
  return std::to_string(gid.bytes[12]) + "." + std::to_string(gid.bytes[13]) + "." +
         std::to_string(gid.bytes[14]) + "." + std::to_string(gid.bytes[15]);
}

} // namespace kube_rdma
