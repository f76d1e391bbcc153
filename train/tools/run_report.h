// `headroom report RUN [RUN ...] [--out FILE.html]`: one self-contained HTML page per run, or a comparison of runs.
// For each run: the summary (machine, precision, wall time, best and final metrics), the resolved config, the model
// (`headroom info`'s table), the training curves against steps and tokens (loss raw and smoothed, learning rate,
// tokens/s, gradient norm, every evaluation metric, skipped steps), the gates' open probabilities over training and
// the heads they keep (runs with L0 gates), where the model goes wrong on the eval split (the task's error
// breakdown: confused labels, worst labels' F1; QA by answer length and question type) and the attention maps of one
// example. With several runs the page starts with their curves overlaid, the config keys that differ and a table of
// results. Figures are PNGs inlined as base64, the only script is a few lines that report an image that does not
// decode on the console, and a Content-Security-Policy forbids every fetch: the page needs no network.
//
// The report reads metrics.jsonl, config.yaml and a checkpoint (best, else last); only the error breakdown runs the
// model over the split (one pass; --no-eval skips it). A RUN that is not a run directory, or a metrics.jsonl line that
// is not a metrics row, is a UsageError naming the file (and line). Data or a model that cannot be loaded here leaves
// a note in the sections that need them.
#pragma once

#include <string>
#include <vector>

namespace hr {

struct ReportArgs {
  std::vector<std::string> runs;
  std::string out;                 // default: RUN/report.html for one run, report.html for several
  std::string split = "eval";      // the split of the error breakdown and the attention example
  std::vector<std::string> texts;  // the attention example, one per input field; default: the split's first row
  bool evaluate = true;            // false: no pass over the data (no error breakdown)
  bool per_run_sections = true;    // false with several runs: the comparison alone (sweep links each run's page)
  std::vector<std::string> links;  // with per_run_sections false: per run, a page to link from the results table
  bool quiet = false;
};

// The page.
std::string render_report(const ReportArgs& args);

// Writes the page to args.out (or its default) and says where; returns the exit code.
int report_command(const ReportArgs& args);

// The default output path of args (see ReportArgs::out).
std::string report_path(const ReportArgs& args);

// The pages of a comparison tool's runs (sweep, allocate): RUN/report.html for each run that has none or an older one
// than its metrics.jsonl, then DIR/report.html comparing them all (curves, config differences, results), its table
// linking each run's page. `tool` prefixes the progress lines.
void write_run_reports(const std::string& tool, const std::string& dir, const std::vector<std::string>& runs);

// A markdown link to RUN/report.html relative to DIR ("[label](heads4-seed0/report.html)"), or "" when it is missing.
std::string report_link(const std::string& dir, const std::string& run, const std::string& label);

}  // namespace hr
