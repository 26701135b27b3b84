#include "rdmactl/cli.h"

#include "common/util/command_line.h"

namespace kube_rdma {

Result<RdmactlOptions> parseRdmactlArgs(const std::vector<std::string>& args) {
  RdmactlOptions opts;
  auto app = makeApp("rdmactl", "rdmactl: RDMA devices, GIDs and NCCL settings of this node.");
  // Global flags after the command are the parent's: the command passes what it lacks up.
  app->fallthrough();
  app->require_subcommand(1);
  const CLI::Validator not_empty(
      [](const std::string& value) { return value.empty() ? "needs a non-empty value" : ""; }, "");
  auto text = [&not_empty](CLI::App* on, const std::string& name, std::string& field,
                           const std::string& type, const std::string& about) {
    on->add_option(name, field, about)->type_name(type)->check(not_empty);
  };
  addNodeRootOptions(*app, opts.sysfs_root, opts.proc_root, opts.dev_root);
  addDiscoveryOption(*app, opts.discovery);
  app->add_flag("--json", opts.json, "JSON output");

  auto command = [&](const std::string& name, RdmactlCommand value, const std::string& about) {
    CLI::App* sub = app->add_subcommand(name, about);
    sub->callback([&opts, value] { opts.command = value; });
    return sub;
  };
  command("devices", RdmactlCommand::kDevices,
          "RDMA devices, ports and netdevs (like ibdev2netdev -v), GPUs");
  command("gids", RdmactlCommand::kGids, "GID tables (like show_gids)")
      ->add_option("device", opts.device, "only this device");
  CLI::App* nccl = command("nccl-env", RdmactlCommand::kNcclEnv,
                           "the node's NCCL settings for a pool, as nccl.conf lines");
  text(nccl, "--pool", opts.pool, "NAME",
       "the pool's resource name (default: the first with HCAs)");
  text(nccl, "--config", opts.config, "FILE", "plugin config file (default: the default pools)");
  CLI::App* doctor = command("doctor", RdmactlCommand::kDoctor,
                             "checks with a verdict and a hint each; exit 1 on a failure");
  text(doctor, "--config", opts.config, "FILE",
       "plugin config file for the pool checks (default: the default pools)");
  CLI::App* help = app->add_subcommand("help", "this text");

  Result<RdmactlOptions> parsed = parseFlags(*app, args, opts);
  // CLI11 reports a missing command before an unknown one: name the word that was typed.
  if (!parsed && app->get_subcommands().empty() && !app->remaining().empty()) {
    return makeError("unknown command: " + app->remaining().front());
  }
  // app->help() would describe the `help` command itself, the one selected.
  if (parsed && help->parsed()) {
    parsed->exit_message =
        app->get_formatter()->make_help(app.get(), "rdmactl", CLI::AppFormatMode::Normal);
  }
  return parsed;
}

} // namespace kube_rdma
