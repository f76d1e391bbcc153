#include "train/tasks/classification_options.h"

namespace hr {

namespace {

// data.text_field: one field name, or a list of two for sentence pairs.
void read_text_fields(const Config& c, ClassificationOptions& o) {
  if (!c.has("text_field")) return;
  try {
    o.text_field = c.get<std::string>("text_field");
    return;
  } catch (const ConfigError&) {  // not a scalar: a list of two, or the list's own error
  }
  const auto fields = c.get<std::vector<std::string>>("text_field");
  if (fields.size() != 2 || fields[0].empty() || fields[1].empty() || fields[0] == fields[1])
    c.fail("text_field", "must be one field name or a list of two different ones (a sentence pair, e.g. "
                         "[premise, hypothesis]), got a list of " + std::to_string(fields.size()));
  o.text_field = fields[0];
  o.pair_field = fields[1];
}

}  // namespace

std::shared_ptr<const TaskOptions> ClassificationOptions::read(const Config& c, bool check_files) {
  auto o = std::make_shared<ClassificationOptions>();
  o->format = c.get_choice("format", {"clinc150", "csv", "tsv", "jsonl"});
  if (o->format == "clinc150") {
    o->path = c.get<std::string>("path");
    o->train_split = c.get<std::string>("train_split", o->train_split);
    o->eval_split = c.get<std::string>("eval_split", o->eval_split);
    o->test_split = c.get<std::string>("test_split", o->test_split);
    o->include_oos = c.get<bool>("include_oos", false);
    if (check_files) require_file(c, "path", o->path);
    return o;
  }
  o->files = SplitFiles::read(c, check_files);
  read_text_fields(c, *o);
  o->label_field = c.get<std::string>("label_field", o->label_field);
  return o;
}

void ClassificationOptions::require_train_data(const Config& data) const {
  if (format != "clinc150") files.require_train(data);
}

std::string ClassificationOptions::row_length_problem(int64_t row_len) const {
  if (!pair_field.empty() && row_len < 5)
    return "must be at least 5 to hold [CLS], two [SEP] and a token of each text of a pair";
  return "";
}

std::vector<std::string> ClassificationOptions::data_overrides(const std::string& split, const std::string& file) const {
  if (format == "clinc150") return {"data.path=" + file};  // the split stays the one asked for, read from FILE
  return {"data." + split + "_path=" + file};
}

}  // namespace hr
