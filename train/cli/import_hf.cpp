// headroom import-hf DIR [--task classification|span_qa|mlm] [--pooling cls_pooler|mean|cls] --out RUN
#include <iostream>
#include <memory>

#include "kernels/base/error.h"
#include "train/cli/command.h"
#include "train/tools/hf_bert.h"

namespace hr {

Command add_import_hf_command(CLI::App& app) {
  auto a = std::make_shared<HfImportArgs>();
  auto* cmd = app.add_subcommand("import-hf", "a Hugging Face BERT checkpoint directory as a headroom run directory");
  cmd->add_option("dir", a->dir, "directory with config.json, model.safetensors, vocab.txt (tokenizer_config.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--task", a->task,
                  "classification | span_qa | mlm (default: from config.json's architectures; mlm for BertForMaskedLM "
                  "and BertForPreTraining)")
      ->check(CLI::IsMember({"classification", "span_qa", "mlm"}));
  cmd->add_option("--pooling", a->pooling,
                  "the classifier's pooling: cls_pooler | mean | cls (default: a sentence-transformers pooling config's "
                  "mean or cls when the directory has one, else cls_pooler, BERT's pooler)")
      ->check(CLI::IsMember({"cls_pooler", "mean", "cls"}));
  cmd->add_option("--out", a->out_dir, "the run directory to write")->required();
  return {cmd, [a] {
            std::vector<std::string> notes;
            try {
              notes = import_hf_bert(*a);
            } catch (const UsageError&) {
              throw;
            } catch (const Error& e) {  // the directory is not one headroom can import: the input's fault, exit 2
              std::cerr << "error: " << e.what() << "\n";
              return 2;
            }
            for (const std::string& note : notes) std::cerr << "note: " << note << "\n";
            std::cout << "imported " << a->dir << " into " << a->out_dir << "\n";
            return 0;
          }};
}

}  // namespace hr
