#include "plugin/port_counters.h"

#include <charconv>

#include "common/sysfs_attributes.h"

namespace kube_rdma {

std::vector<PortCounter> readPortCounters(const std::string& sysfs_root,
                                          const NodeTopology& topology) {
  std::vector<PortCounter> out;
  for (const auto& device : topology.devices) {
    for (const auto& port : device.ports) {
      for (const char* source : {"counters", "hw_counters"}) {
        const std::string dir = sysfs_root + "/class/infiniband/" + device.name + "/ports/" +
                                std::to_string(port.number) + "/" + source;
        for (const auto& name : listDirectory(dir)) {
          auto text = readAttribute(dir + "/" + name);
          uint64_t value = 0;
          if (!text ||
              std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc()) {
            continue;
          }
          out.push_back({device.name, port.number, source, name, static_cast<double>(value)});
        }
      }
    }
  }
  return out;
}

} // namespace kube_rdma
