#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/util/result.h"

namespace kube_rdma {

// One gRPC server listening on one unix socket. The socket exists and serves when start()
// returns (the kubelet requires a plugin to serve before it registers); the destructor shuts the
// server down and removes the socket.
class GrpcSocketServer {
public:
  /**
   * @param socket_path absolute path; a stale file there is removed first.
   * @param services not owned; must outlive the server.
   */
  static Result<std::unique_ptr<GrpcSocketServer>>
  start(const std::string& socket_path, const std::vector<grpc::Service*>& services);
  ~GrpcSocketServer();

  const std::string& socketPath() const { return socket_path_; }
  // Whether our socket file is still the one we created (the kubelet may have wiped it).
  bool socketPresent() const;

private:
  GrpcSocketServer(std::string socket_path, std::unique_ptr<grpc::Server> server, ino_t inode)
      : socket_path_(std::move(socket_path)), server_(std::move(server)), inode_(inode) {}

  const std::string socket_path_;
  std::unique_ptr<grpc::Server> server_;
  const ino_t inode_;
};
using GrpcSocketServerPtr = std::unique_ptr<GrpcSocketServer>;

} // namespace kube_rdma
