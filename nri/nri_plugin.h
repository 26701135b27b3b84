#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "common/util/log.h"
#include "nri/nri_session.h"

// An NRI plugin connected to the runtime's socket (/var/run/nri/nri.sock), run on a thread of
// its own by the node daemon: connects, registers, answers the runtime's calls through
// NriSession, and connects again after the runtime restarts or closes the connection. A runtime
// without NRI (no socket) is logged once and tried again; it never stops the daemon.
namespace kube_rdma {

struct NriPluginOptions {
  std::string socket_path = "/var/run/nri/nri.sock";
  std::string name = "kube-rdma";
  // Plugins are called in the order of their index; a plugin that sets NCCL values of the
  // container's own network runs late, after plugins that might move it between networks.
  std::string index = "90";
  std::chrono::milliseconds retry{5000};
};

class NriPlugin {
public:
  NriPlugin(NriPluginOptions options, CreateContainerHandler handler, Logger& log,
            PodSeenHandler on_pod = nullptr);
  ~NriPlugin();
  NriPlugin(const NriPlugin&) = delete;
  NriPlugin& operator=(const NriPlugin&) = delete;

  void start();
  // Closes the connection (the runtime unregisters the plugin) and joins the thread.
  void stop();

private:
  void run();
  // One connection, until it ends or stop(); the error says why it ended. `configured`: the
  // runtime took the registration.
  Status serve(int socket, bool& configured);
  // False when stop() came during the wait.
  bool waitUnlessStopped(std::chrono::milliseconds wait) const;

  NriPluginOptions options_;
  CreateContainerHandler handler_;
  PodSeenHandler on_pod_;
  Logger& log_;
  int stop_fd_ = -1;
  std::thread thread_;
};

} // namespace kube_rdma
