#include "train/tasks/mlm_options.h"

#include "train/data/text_corpus.h"

namespace hr {

namespace {

// A corpus path value: a string (a file or a glob) or a list of them.
std::vector<std::string> read_paths(const Config& c, const std::string& key) {
  if (!c.has(key)) return {};
  try {
    return {c.get<std::string>(key)};
  } catch (const ConfigError&) {  // not a scalar: a list, or the list's own error
  }
  auto paths = c.get<std::vector<std::string>>(key);
  if (paths.empty()) c.fail(key, "must name at least one file");
  return paths;
}

MlmMaskOptions read_mask(const Config& data) {
  MlmMaskOptions o;
  const auto c = data.optional_child("mlm");
  if (!c) return o;
  o.probability = c->get<float>("probability", o.probability);
  o.mask = c->get<float>("mask", o.mask);
  o.random = c->get<float>("random", o.random);
  o.whole_word = c->get<bool>("whole_word", o.whole_word);
  try {
    check_mlm_options(o);
  } catch (const Error& e) {  // the message names the key; the line comes from the block
    c->fail(e.what());
  }
  return o;
}

}  // namespace


std::shared_ptr<const TaskOptions> MlmOptions::read(const Config& c, bool check_files) {
  auto o = std::make_shared<MlmOptions>();
  c.get_choice("format", {"text"}, "text");
  for (const auto& [key, files] : {std::pair{"train_path", &o->train_files}, {"eval_path", &o->eval_files},
                                   {"test_path", &o->test_files}}) {
    *files = read_paths(c, key);
    if (check_files && !files->empty()) {
      try {
        *files = expand_corpus_paths(*files, "data." + std::string(key));
      } catch (const Error& e) {
        c.fail(key, e.what());
      }
    }
  }
  o->cache_dir = c.get<std::string>("cache_dir", "");
  o->mask = read_mask(c);
  if (const auto m = c.optional_child("mlm")) {
    o->max_eval_rows = m->get<int64_t>("max_eval_rows", 0);
    if (o->max_eval_rows < 0) m->fail("max_eval_rows", "must be >= 0 (0: every row)");
  }
  return o;
}

const std::vector<std::string>& MlmOptions::files(const std::string& split) const {
  if (split == "train") return train_files;
  if (split == "eval") return eval_files;
  HR_CHECK(split == "test", "unknown split '" + split + "' (train, eval or test)");
  return test_files;
}

void MlmOptions::require_train_data(const Config& data) const {
  if (!train_files.empty()) return;
  data.get<std::string>("train_path");  // missing: the required-key error, with the key that may be meant for it
  data.fail("train_path", "must name the training corpus (a file, a list of files or a glob)");
}

std::string MlmOptions::row_length_problem(int64_t row_len) const {
  if (row_len < 4) return "must be at least 4 to hold [CLS], [SEP] and two tokens of text";
  return "";
}

std::vector<std::string> MlmOptions::data_overrides(const std::string& split, const std::string& file) const {
  return {"data." + split + "_path=" + file};
}

}  // namespace hr
