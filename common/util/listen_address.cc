#include "common/util/listen_address.h"

#include "common/util/strings.h"

namespace kube_rdma {

Result<ListenAddress> parseListenAddress(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return makeError("address \"" + text + "\" has no port (want HOST:PORT or :PORT)");
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return makeError("address \"" + text + "\": write IPv6 hosts in brackets, [::1]:8443");
  }
  const std::string port_text = text.substr(colon + 1);
  const auto port = parseWhole<int>(port_text);
  if (!port || *port < 0 || *port > 65535) {
    return makeError("address \"" + text +
                     "\": the port must be a whole number in [0, 65535], got \"" + port_text +
                     "\"");
  }
  return ListenAddress{host.empty() ? "0.0.0.0" : host, *port};
}

} // namespace kube_rdma
