// One subcommand of `headroom`: each file in train/cli/ adds its options to the app and returns what runs it, so
// main.cpp only dispatches. Options live in the closure (a shared_ptr), not in main.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hr {

struct Command {
  CLI::App* app;             // the subcommand, to see whether it was chosen
  std::function<int()> run;  // returns the process exit code
};

Command add_train_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_prune_command(CLI::App& app);
Command add_heads_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_allocate_command(CLI::App& app);
Command add_attention_command(CLI::App& app);
Command add_import_hf_command(CLI::App& app);
Command add_export_hf_command(CLI::App& app);
Command add_embed_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_curves_command(CLI::App& app);
Command add_plot_command(CLI::App& app);
Command add_report_command(CLI::App& app);

// --run DIR (required) and --checkpoint best|last: how every command that reads a run directory names it.
void add_run_options(CLI::App* cmd, std::string& run_dir, std::string& which);
// --precision f32|bf16, added to `overrides` as train.precision=...
void add_precision_option(CLI::App* cmd, std::vector<std::string>& overrides);
// Number checks for options. CLI11's PositiveNumber and NonNegativeNumber let "nan" through (every comparison with
// NaN is false) and print their bounds with 300 digits; these refuse NaN and infinities and state the bound plainly.
CLI::Validator positive_number();
CLI::Validator non_negative_number();
CLI::Validator finite_number();
// The size of a run's vocabulary when `config` is a run directory's config.yaml (which names none: the run's vocab.txt
// sits beside it), else 0.
int64_t run_vocab_size(const std::string& config);

}  // namespace hr
