// headroom import-hf DIR [--task classification|span_qa] --out RUN
#include <iostream>
#include <memory>

#include "train/cli/command.h"
#include "train/tools/hf_bert.h"

namespace hr {

Command add_import_hf_command(CLI::App& app) {
  auto a = std::make_shared<HfImportArgs>();
  auto* cmd = app.add_subcommand("import-hf", "a Hugging Face BERT checkpoint directory as a headroom run directory");
  cmd->add_option("dir", a->dir, "directory with config.json, model.safetensors, vocab.txt (tokenizer_config.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--task", a->task, "classification | span_qa (default: from config.json's architectures)")
      ->check(CLI::IsMember({"classification", "span_qa"}));
  cmd->add_option("--out", a->out_dir, "the run directory to write")->required();
  return {cmd, [a] {
            for (const std::string& note : import_hf_bert(*a)) std::cerr << "note: " << note << "\n";
            std::cout << "imported " << a->dir << " into " << a->out_dir << "\n";
            return 0;
          }};
}

}  // namespace hr
