// cpp-httplib 0.11.4's SSL server and nothing of kube-rdma: POST /mutate answers the bytes of a
// file. bench_https.sh's "bare" server, the reference for the webhook's latency: a pool of
// THREADS threads (the webhook's connection cap, so every connection has one), keep-alive without
// a request limit, TCP_NODELAY as the webhook.
//   bare_httplib_server CERT KEY PORT REPLY_FILE [THREADS]
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: bare_httplib_server CERT KEY PORT REPLY_FILE [THREADS]\n";
    return 2;
  }
  std::ifstream file(argv[4]);
  std::stringstream reply;
  reply << file.rdbuf();
  if (!file) {
    std::cerr << "bare_httplib_server: cannot read " << argv[4] << "\n";
    return 2;
  }
  const std::string body = reply.str();
  const size_t threads = argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 1024;
  httplib::SSLServer server(argv[1], argv[2]);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  server.set_tcp_nodelay(true);
  server.Post("/mutate", [&body](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  return server.listen("127.0.0.1", std::atoi(argv[3])) ? 0 : 1;
}
