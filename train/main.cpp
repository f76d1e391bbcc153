// headroom: the command line. Each subcommand lives in train/cli/; this file only dispatches and turns errors into exit
// codes: 2 for usage and config errors (CLI11's own included), 1 for other errors.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <new>

#include "framework/config.h"
#include "framework/distributed/communicator.h"
#include "kernels/base/error.h"
#include "train/cli/command.h"

using namespace hr;

int main(int argc, char** argv) {
  // OpenMP threads that spin while they wait burn the CPU that the other thread (or another process) needs: on a
  // shared 2-core machine a training step ran 15x slower with spinning. libgomp reads OMP_WAIT_POLICY when it loads,
  // so a process started without it sets it and starts itself again (OMP_WAIT_POLICY=active restores spinning).
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  }
  CLI::App app{"headroom: train and study transformer encoders with per-layer heads"};
  app.require_subcommand(1);
  const Command commands[] = {add_train_command(app),     add_eval_command(app),      add_predict_command(app),
                              add_info_command(app),      add_bench_command(app),     add_sweep_command(app),
                              add_allocate_command(app),  add_attention_command(app), add_prune_command(app),
                              add_heads_command(app),     add_import_hf_command(app), add_export_hf_command(app),
                              add_embed_command(app),     add_tokenize_command(app),  add_curves_command(app),
                              add_plot_command(app),      add_report_command(app)};
  // a mistyped command: CLI11 would only say the argument was not expected
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const Command& c : commands) names.push_back(c.app->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string hint = did_you_mean(argv[1], names);
      std::cerr << "headroom: unknown command '" << argv[1] << "'"
                << (hint.empty() ? "" : " (did you mean '" + hint + "'?)") << "; run headroom --help for the list\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message (or the help)
    return e.get_exit_code() == 0 ? 0 : 2;  // a missing file or run directory is a usage error too
  }
  // Under mpirun every rank ends MPI: in order when the command returned (all ranks return together), by stopping the
  // whole job when it threw (one rank may have failed alone while the others wait for it).
  int code = 0;
  try {
    for (const Command& c : commands)
      if (*c.app) code = c.run();
    finalize_distributed(code, true);
    return code;
  } catch (const ConfigError& e) {
    std::cerr << rank_prefix() << "config error: " << e.what() << "\n";
    code = 2;
  } catch (const UsageError& e) {
    std::cerr << rank_prefix() << "usage error: " << e.what() << "\n";
    code = 2;
  } catch (const std::bad_alloc&) {
    std::cerr << rank_prefix() << "error: out of memory (is the model or the batch too large for this machine?)\n";
    code = 1;
  } catch (const std::exception& e) {
    std::cerr << rank_prefix() << "error: " << e.what() << "\n";
    code = 1;
  }
  finalize_distributed(code, false);
  return code;
}
