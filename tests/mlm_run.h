// A tiny pretraining run for tests: the Wikipedia extract of tests/fixtures/wiki_en_tiny cut into a training and an
// evaluation corpus (whole articles, disjoint), and a 2-layer d_model 32 encoder_mlm config with BERT's uncased
// vocabulary and 32-token rows.
#pragma once

#include "tests/repo_files.h"
#include "tests/tiny_run.h"

namespace hr::testing {

// Articles (blocks separated by an empty line) of `text`, from `first` up to `last` (exclusive).
inline std::string articles(const std::string& text, size_t first, size_t last) {
  std::string out;
  size_t at = 0, k = 0;
  while (at < text.size()) {
    size_t end = text.find("\n\n", at);
    end = end == std::string::npos ? text.size() : end + 2;
    if (k >= first && k < last) out += text.substr(at, end - at);
    at = end;
    ++k;
  }
  return out;
}

// `vocab_size` 0: BERT's uncased vocabulary; else one of that size learned from the training corpus.
inline std::string mlm_config(const TempDir& d, const std::string& train_extra = "", int vocab_size = 0) {
  return "model:\n"
         "  type: encoder_mlm\n"
         "  d_model: 32\n"
         "  ffn_dim: 64\n"
         "  max_len: 32\n"
         "  norm: post\n"
         "  dropout: 0.1\n"
         "  segments: 2\n"
         "  layers:\n"
         "    - repeat: 2\n"
         "      attention: {heads: 2, head_dim: 16}\n"
         "tokenizer:\n" +
         (vocab_size ? "  vocab_size: " + std::to_string(vocab_size) + "\n"
                     : "  vocab: " + data_file("bert_vocab/bert-base-uncased-vocab.txt") + "\n") +
         "data:\n"
         "  task: mlm\n"
         "  format: text\n"
         "  train_path: " + (d / "train.txt") + "\n"
         "  eval_path: " + (d / "eval.txt") + "\n"
         "  cache_dir: " + (d / "cache") + "\n"
         "train:\n"
         "  max_steps: 20\n"
         "  batch_size: 16\n"
         "  lr: 2e-3\n"
         "  warmup: 3\n"
         "  schedule: constant\n"
         "  seed: 1\n"
         "  log_every: 1\n"
         "  eval_every: 10\n" + train_extra;
}

// From `source` (head.txt: 6 articles, 63 KB; tiny.txt: 25 articles, 282 KB): eval.txt its first `eval_articles`,
// train.txt the rest. Returns the config path.
inline std::string mlm_setup(const TempDir& d, const std::string& train_extra = "",
                             const std::string& source = "head.txt", size_t eval_articles = 1, int vocab_size = 0) {
  const std::string text = read_file(repo_path("tests/fixtures/wiki_en_tiny/" + source));
  write_file(d / "train.txt", articles(text, eval_articles, 1000));
  write_file(d / "eval.txt", articles(text, 0, eval_articles));
  write_file(d / "mlm.yaml", mlm_config(d, train_extra, vocab_size));
  return d / "mlm.yaml";
}

}  // namespace hr::testing
