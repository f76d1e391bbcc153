// headroom report RUN [RUN ...] [--out FILE.html]
#include <memory>

#include "train/cli/command.h"
#include "train/tools/run_report.h"

namespace hr {

Command add_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "one self-contained HTML page of a run, or a comparison of runs");
  cmd->add_option("runs", a->runs, "run directories")->required();
  cmd->add_option("--out", a->out, "the HTML file (default RUN/report.html; report.html for several runs)");
  cmd->add_option("--split", a->split, "split of the error breakdown and the attention example")
      ->check(CLI::IsMember({"eval", "test"}));
  // one value an occurrence, so that run directories after --text stay runs
  cmd->add_option("--text", a->texts, "the attention maps' example, once per input of the run (default: the "
                                      "split's first row)")
      ->allow_extra_args(false);
  cmd->add_flag("!--no-eval", a->evaluate, "no pass over the data: leave out the error breakdown");
  cmd->add_flag("--compare-only", [a](int64_t) { a->per_run_sections = false; },
                "with several runs: the comparison alone, without each run's sections");
  cmd->add_flag("--quiet", a->quiet, "print nothing but errors");
  return {cmd, [a] { return report_command(*a); }};
}

}  // namespace hr
