#include "common/node/netns_links.h"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kube_rdma {
namespace {

// A namespace with thousands of interfaces is not a pod's; past this the dump is refused.
constexpr size_t kMaxDumpBytes = size_t{16} << 20;

std::string attributeString(const rtattr* attribute) {
  const auto* data = static_cast<const char*>(RTA_DATA(attribute));
  const size_t length = RTA_PAYLOAD(attribute);
  return std::string(data, strnlen(data, length));
}

// The links of one RTM_NEWLINK message's attributes.
NetnsLink linkOf(const nlmsghdr* message) {
  const auto* info = static_cast<const ifinfomsg*>(NLMSG_DATA(message));
  NetnsLink link;
  link.loopback = (info->ifi_flags & IFF_LOOPBACK) != 0;
  int length = static_cast<int>(IFLA_PAYLOAD(message));
  for (const rtattr* a = IFLA_RTA(info); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
    if (a->rta_type == IFLA_IFNAME) {
      link.name = attributeString(a);
    } else if (a->rta_type == IFLA_LINKINFO) {
      int inner = static_cast<int>(RTA_PAYLOAD(a));
      for (const auto* i = static_cast<const rtattr*>(RTA_DATA(a)); RTA_OK(i, inner);
           i = RTA_NEXT(i, inner)) {
        if (i->rta_type == IFLA_INFO_KIND) {
          link.kind = attributeString(i);
        }
      }
    }
  }
  return link;
}

} // namespace

Result<std::vector<NetnsLink>> parseLinkDump(std::string_view messages) {
  std::vector<NetnsLink> links;
  // NLMSG_* work on a mutable length and aligned headers: copy into an aligned buffer.
  std::vector<nlmsghdr> storage(messages.size() / sizeof(nlmsghdr) + 1);
  std::memcpy(storage.data(), messages.data(), messages.size());
  auto length = static_cast<unsigned>(messages.size());
  for (const nlmsghdr* m = storage.data(); NLMSG_OK(m, length); m = NLMSG_NEXT(m, length)) {
    if (m->nlmsg_type == NLMSG_DONE) {
      return links;
    }
    if (m->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(m));
      return makeError(std::string("the kernel refused the link dump: ") +
                       std::strerror(-error->error));
    }
    if (m->nlmsg_type == RTM_NEWLINK && m->nlmsg_len >= NLMSG_LENGTH(sizeof(ifinfomsg))) {
      links.push_back(linkOf(m));
    }
  }
  if (length != 0) {
    return makeError("a truncated netlink message in the link dump");
  }
  return makeError("the link dump ended without NLMSG_DONE");
}

Result<std::vector<NetnsLink>> listNetnsLinks() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) {
    return makeError(std::string("cannot open a netlink socket: ") + std::strerror(errno));
  }
  struct {
    nlmsghdr header;
    ifinfomsg body;
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg));
  request.header.nlmsg_type = RTM_GETLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = 1;
  request.body.ifi_family = AF_UNSPEC;
  std::string dump;
  Result<std::vector<NetnsLink>> result = makeError("the link dump is larger than 16 MiB");
  if (send(fd, &request, request.header.nlmsg_len, 0) < 0) {
    result = makeError(std::string("cannot send the link dump request: ") + std::strerror(errno));
  } else {
    alignas(nlmsghdr) char buffer[32768];
    while (dump.size() < kMaxDumpBytes) {
      const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        result = makeError(std::string("cannot read the link dump: ") +
                           (n == 0 ? "the socket closed" : std::strerror(errno)));
        break;
      }
      dump.append(buffer, static_cast<size_t>(n));
      const auto* last = reinterpret_cast<const nlmsghdr*>(buffer);
      auto left = static_cast<unsigned>(n);
      bool done = false;
      for (; NLMSG_OK(last, left); last = NLMSG_NEXT(last, left)) {
        done = done || last->nlmsg_type == NLMSG_DONE || last->nlmsg_type == NLMSG_ERROR;
      }
      if (done) {
        result = parseLinkDump(dump);
        break;
      }
    }
  }
  close(fd);
  return result;
}

bool mayHoldGids(const std::vector<NetnsLink>& links) {
  return std::any_of(links.begin(), links.end(),
                     [](const NetnsLink& l) { return !l.loopback && l.kind != "veth"; });
}

} // namespace kube_rdma
