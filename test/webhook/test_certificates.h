#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

// Real certificates for TLS tests, made by the openssl command line: <dir>/ca.crt and ca.key, a
// CA; for each name, <dir>/<name>.crt and <name>.key, a serving certificate for 127.0.0.1 and
// localhost signed by it. P-256 keys: an RSA-2048 key takes 0.1-0.5 s to generate, an EC key
// milliseconds, and these are made per test (webhook_faults and bench_https.sh use RSA, as
// cert-manager does by default).
namespace kube_rdma {

// The command that failed, or empty when every certificate was made.
inline std::string makeTestCertificates(const std::filesystem::path& dir,
                                        const std::vector<std::string>& names) {
  const std::string new_key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1";
  const std::string d = dir.string();
  std::vector<std::string> commands = {"openssl req -x509 " + new_key + " -nodes -keyout " + d +
                                       "/ca.key -out " + d +
                                       "/ca.crt -days 2 -subj /CN=kube-rdma-test-ca"};
  for (const std::string& name : names) {
    commands.push_back("openssl req " + new_key + " -nodes -keyout " + d + "/" + name +
                       ".key -out " + d + "/" + name + ".csr -subj /CN=" + name);
    commands.push_back("openssl x509 -req -in " + d + "/" + name + ".csr -CA " + d +
                       "/ca.crt -CAkey " + d + "/ca.key -CAcreateserial -days 1 -extfile " + d +
                       "/san.ext -out " + d + "/" + name + ".crt");
  }
  std::ofstream(dir / "san.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  for (const std::string& command : commands) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
      return command;
    }
  }
  return "";
}

} // namespace kube_rdma
