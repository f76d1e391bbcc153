// headroom export-hf --run RUN [--checkpoint best|last] --out DIR
#include <iostream>
#include <memory>

#include "train/cli/command.h"
#include "train/tools/hf_bert.h"

namespace hr {

Command add_export_hf_command(CLI::App& app) {
  auto a = std::make_shared<HfExportArgs>();
  auto* cmd = app.add_subcommand("export-hf", "write a run's BERT model as a Hugging Face checkpoint directory");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--out", a->out_dir, "the directory to write (config.json, model.safetensors, vocab.txt, ...)")
      ->required();
  cmd->add_flag("--force", a->force, "write into a non-empty --out (replacing the four files; never a run directory)");
  return {cmd, [a] {
            export_hf_bert(*a);
            std::cout << "exported " << a->run_dir << " (" << a->which << ") to " << a->out_dir << "\n";
            return 0;
          }};
}

}  // namespace hr
