#include "train/tools/hf_bert.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "framework/atomic_file.h"
#include "framework/bounded_json.h"
#include "framework/config.h"
#include "framework/safetensors.h"
#include "kernels/base/error.h"
#include "models/encoder_layer.h"
#include "models/encoder_model.h"
#include "models/model_size.h"
#include "train/run/checkpoint.h"
#include "train/run/new_out_dir.h"
#include "train/run/trainer.h"
#include "train/tasks/classification_task.h"
#include "train/tokenizer/vocab.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hr {

namespace {

// BERT name (without "bert.") <-> headroom name, for the parameters outside the layers.
const std::vector<std::pair<std::string, std::string>>& top_names() {
  static const std::vector<std::pair<std::string, std::string>> t = {
      {"embeddings.word_embeddings.weight", "embeddings.token"},
      {"embeddings.position_embeddings.weight", "embeddings.position"},
      {"embeddings.token_type_embeddings.weight", "embeddings.segment"},
      {"embeddings.LayerNorm.weight", "embeddings.ln.weight"},
      {"embeddings.LayerNorm.bias", "embeddings.ln.bias"},
      {"pooler.dense.weight", "classifier.pooler.weight"},
      {"pooler.dense.bias", "classifier.pooler.bias"},
      {"classifier.weight", "classifier.weight"},
      {"classifier.bias", "classifier.bias"},
      {"qa_outputs.weight", "span.weight"},
      {"qa_outputs.bias", "span.bias"},
      {"cls.predictions.transform.dense.weight", "mlm.dense.weight"},
      {"cls.predictions.transform.dense.bias", "mlm.dense.bias"},
      {"cls.predictions.transform.LayerNorm.weight", "mlm.ln.weight"},
      {"cls.predictions.transform.LayerNorm.bias", "mlm.ln.bias"},
      {"cls.predictions.bias", "mlm.bias"}};
  return t;
}

// The task whose head a headroom parameter belongs to ("" for the encoder's).
std::string head_task(const std::string& ours) {
  if (ours.starts_with("classifier.")) return "classification";
  if (ours.starts_with("span.")) return "span_qa";
  if (ours.starts_with("mlm.")) return "mlm";
  return "";
}

// How the notes and errors name a task's head.
std::string head_title(const std::string& task) {
  return task == "classification" ? "sequence classification" : task == "span_qa" ? "span QA" : "masked-LM";
}

// Within layer i: "encoder.layer.<i>." + BERT module <-> "layers.<i>." + headroom module (each .weight and .bias).
const std::vector<std::pair<std::string, std::string>>& layer_modules() {
  static const std::vector<std::pair<std::string, std::string>> t = {
      {"attention.self.query", "attn.q"},       {"attention.self.key", "attn.k"},
      {"attention.self.value", "attn.v"},       {"attention.output.dense", "attn.o"},
      {"attention.output.LayerNorm", "ln1"},    {"intermediate.dense", "ffn.in"},
      {"output.dense", "ffn.out"},              {"output.LayerNorm", "ln2"}};
  return t;
}

// "<prefix><digits>.<rest>" -> (digits, rest)
bool split_index(const std::string& s, const std::string& prefix, std::string& index, std::string& rest) {
  if (!s.starts_with(prefix)) return false;
  const size_t dot = s.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return false;
  index = s.substr(prefix.size(), dot - prefix.size());
  rest = s.substr(dot + 1);
  return std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "<module>.weight" or "<module>.bias" -> (module, ".weight" / ".bias")
bool split_suffix(const std::string& s, std::string& module, std::string& suffix) {
  for (const char* sfx : {".weight", ".bias"}) {
    const std::string x = sfx;
    if (s.size() > x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
      module = s.substr(0, s.size() - x.size());
      suffix = x;
      return true;
    }
  }
  return false;
}

json read_json(const std::string& path) { return read_json_file(path, 64 << 20, "JSON config"); }

// config.json's fields, each an error naming the file and the key when missing or of the wrong type.
struct JsonFields {
  const json& j;
  std::string path;
  template <class T>
  T get(const std::string& key) const {
    HR_CHECK(j.contains(key), path + ": missing key '" + key + "'");
    try {
      return j.at(key).get<T>();
    } catch (const json::exception&) {
      throw Error(path + ": '" + key + "' has the wrong type (" + j.at(key).dump() + ")");
    }
  }
  template <class T>
  T get(const std::string& key, const T& fallback) const {
    return j.contains(key) && !j.at(key).is_null() ? get<T>(key) : fallback;
  }
  int64_t positive(const std::string& key) const {
    const int64_t v = get<int64_t>(key);
    HR_CHECK(v > 0, path + ": '" + key + "' must be positive, got " + std::to_string(v));
    return v;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(path + ": '" + key + "': " + what);
  }
};

// Per layer: the original indices of the heads BERT's pruned_heads leaves.
std::vector<std::vector<int64_t>> kept_heads(const JsonFields& c, int64_t layers, int64_t heads) {
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(layers));
  std::vector<std::set<int64_t>> pruned(static_cast<size_t>(layers));
  if (c.j.contains("pruned_heads") && !c.j.at("pruned_heads").is_null()) {
    const json& p = c.j.at("pruned_heads");
    if (!p.is_object()) c.fail("pruned_heads", "expected an object {layer: [heads]}");
    for (const auto& [layer, list] : p.items()) {
      int64_t l = -1;
      if (!layer.empty() && std::all_of(layer.begin(), layer.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        l = std::stoll(layer);
      if (l < 0 || l >= layers) c.fail("pruned_heads", "layer '" + layer + "' is not one of the " +
                                                          std::to_string(layers) + " layers");
      if (!list.is_array()) c.fail("pruned_heads", "layer " + layer + ": expected a list of head indices");
      for (const json& h : list) {
        if (!h.is_number_integer() || h.get<int64_t>() < 0 || h.get<int64_t>() >= heads)
          c.fail("pruned_heads", "layer " + layer + ": " + h.dump() + " is not a head index below " +
                                     std::to_string(heads));
        pruned[static_cast<size_t>(l)].insert(h.get<int64_t>());
      }
    }
  }
  for (size_t l = 0; l < kept.size(); ++l)
    for (int64_t h = 0; h < heads; ++h)
      if (!pruned[l].count(h)) kept[l].push_back(h);
  return kept;
}

// A YAML scalar of a config.json float as it was written (1e-12, 0.1), not as yaml-cpp spells a double
// (9.9999999999999998e-13).
YAML::Node number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return YAML::Node(std::string(buf));
}

struct ImportPlan {
  std::string task;  // classification | span_qa | mlm
  bool classifier = false;
  std::vector<std::string> notes;
  std::vector<std::string> labels;  // classification: id2label in id order (empty: config.json has none)
  YAML::Node model;
  int64_t max_len = 0, segments = 0;
};

// The head to import: --task, else the one config.json's architectures name (a note when they name none).
std::string import_task(const JsonFields& c, const std::string& task_flag, std::vector<std::string>& notes) {
  if (!task_flag.empty()) return task_flag;
  const auto arch = c.get<std::vector<std::string>>("architectures", {});
  const bool cls = std::find(arch.begin(), arch.end(), "BertForSequenceClassification") != arch.end();
  const bool qa = std::find(arch.begin(), arch.end(), "BertForQuestionAnswering") != arch.end();
  // BertForPreTraining's MLM head is BertForMaskedLM's (its next-sentence head is not used)
  const bool mlm = std::find(arch.begin(), arch.end(), "BertForMaskedLM") != arch.end() ||
                   std::find(arch.begin(), arch.end(), "BertForPreTraining") != arch.end();
  if (cls && qa)
    throw UsageError(c.path + ": 'architectures' names both BertForSequenceClassification and "
                              "BertForQuestionAnswering: choose the head with --task classification|span_qa|mlm");
  if (!cls && !qa && !mlm) {  // BertModel (sentence encoders), or none named
    std::string names;
    for (const auto& n : arch) names += (names.empty() ? "" : ", ") + n;
    notes.push_back(c.path + ": 'architectures' (" + (names.empty() ? "none" : names) + ") has no task head: " +
                    "imported with a sequence classifier (--task span_qa for a span QA head, --task mlm for "
                    "BERT's masked-LM head)");
  }
  return qa ? "span_qa" : cls || !mlm ? "classification" : "mlm";
}

// What headroom's encoder is not: another activation, other position embeddings, a decoder.
void check_bert_features(const JsonFields& c) {
  const std::string act = c.get<std::string>("hidden_act", "gelu");
  if (act != "gelu") c.fail("hidden_act", "'" + act + "' is not supported (headroom's gelu is the erf GELU, 'gelu')");
  const std::string pos = c.get<std::string>("position_embedding_type", "absolute");
  if (pos != "absolute") c.fail("position_embedding_type", "'" + pos + "' is not supported (only absolute)");
  if (c.get<bool>("is_decoder", false)) c.fail("is_decoder", "a decoder is not supported");
}

// Sizes from a corrupt or hostile config.json, refused before per-layer plans (or the model) are allocated.
void check_bert_size(const JsonFields& c, int64_t d, int64_t layers, int64_t max_len) {
  const double hidden = static_cast<double>(d), ffn = static_cast<double>(c.positive("intermediate_size"));
  const double per_layer = 4 * hidden * hidden + 2 * hidden * ffn;
  const double in_layers = static_cast<double>(layers) * per_layer;
  const double in_positions = static_cast<double>(max_len) * hidden;
  const double parameters = in_layers + in_positions;
  if (8 * parameters > machine_memory_bytes())
    c.fail(in_layers > in_positions ? "num_hidden_layers" : "max_position_embeddings",
           "num_hidden_layers " + std::to_string(layers) + ", hidden_size " + std::to_string(d) +
               ", intermediate_size " + std::to_string(static_cast<int64_t>(ffn)) + " and max_position_embeddings " +
               std::to_string(max_len) + " make a model that needs at least " + bytes_text(8 * parameters) +
               "; this machine has " + bytes_text(machine_memory_bytes()));
}

// A classifier's labels: id2label in id order (empty without one, as in bert-base-uncased: import_hf_bert decides).
std::vector<std::string> id2label_labels(const JsonFields& c) {
  const json id2label = c.get<json>("id2label", json::object());
  std::vector<std::string> labels(id2label.size());
  for (const auto& [id, label] : id2label.items()) {
    size_t i = labels.size();
    if (!id.empty() && std::all_of(id.begin(), id.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      i = std::stoul(id);
    if (i >= labels.size() || !label.is_string() || !labels[i].empty())
      c.fail("id2label", "expected labels with the ids 0.." + std::to_string(labels.size() - 1));
    labels[i] = label.get<std::string>();
  }
  return labels;
}

// model.layers: one group repeated `layers` times, or one group a layer when pruned_heads leaves some layer fewer
// heads (its kept heads by their original indices).
YAML::Node bert_layer_groups(const JsonFields& c, int64_t layers, int64_t heads, int64_t head_dim) {
  const auto kept = kept_heads(c, layers, heads);
  YAML::Node groups(YAML::NodeType::Sequence);
  const bool pruned = std::any_of(kept.begin(), kept.end(), [&](const auto& k) {
    return static_cast<int64_t>(k.size()) != heads;
  });
  for (int64_t l = 0; l < (pruned ? layers : 1); ++l) {
    YAML::Node g, a;
    a.SetStyle(YAML::EmitterStyle::Flow);
    const auto& k = kept[static_cast<size_t>(l)];
    a["heads"] = static_cast<int64_t>(k.size());
    a["head_dim"] = head_dim;
    if (static_cast<int64_t>(k.size()) != heads) {
      if (k.empty()) a["pruned"] = true;  // allows 0 heads
      YAML::Node orig(YAML::NodeType::Sequence);
      orig.SetStyle(YAML::EmitterStyle::Flow);
      for (int64_t h : k) orig.push_back(h);
      a["original_heads"] = orig;
    }
    if (!pruned) g["repeat"] = layers;
    g["attention"] = a;
    groups.push_back(g);
  }
  return groups;
}

// The model: block that is this BERT, from config.json.
ImportPlan plan_model(const json& j, const std::string& path, const std::string& task_flag, const std::string& pooling) {
  const JsonFields c{j, path};
  ImportPlan p;
  const std::string model_type = c.get<std::string>("model_type", "bert");
  if (model_type != "bert") c.fail("model_type", "'" + model_type + "' is not BERT (only model_type bert imports)");
  p.task = import_task(c, task_flag, p.notes);
  p.classifier = p.task == "classification";
  check_bert_features(c);

  const int64_t d = c.positive("hidden_size"), layers = c.positive("num_hidden_layers"),
                heads = c.positive("num_attention_heads");
  if (d % heads != 0)
    c.fail("num_attention_heads", std::to_string(heads) + " does not divide hidden_size " + std::to_string(d));
  p.max_len = c.positive("max_position_embeddings");
  p.segments = c.positive("type_vocab_size");
  check_bert_size(c, d, layers, p.max_len);
  if (p.classifier) p.labels = id2label_labels(c);

  YAML::Node m;
  m["type"] = p.classifier ? "encoder_classifier" : p.task == "span_qa" ? "encoder_span_qa" : "encoder_mlm";
  m["d_model"] = d;
  m["ffn_dim"] = c.positive("intermediate_size");
  m["max_len"] = p.max_len;
  m["segments"] = p.segments;
  m["norm"] = "post";
  m["layer_norm_eps"] = number(c.get<double>("layer_norm_eps", 1e-12));
  m["dropout"] = number(c.get<double>("hidden_dropout_prob", 0.1));
  m["attention_dropout"] = number(c.get<double>("attention_probs_dropout_prob", 0.1));
  m["activation_dropout"] = 0;  // BERT drops no feed-forward hidden units
  if (p.classifier) m["pooling"] = pooling;
  m["layers"] = bert_layer_groups(c, layers, heads, d / heads);
  p.model = m;
  return p;
}

std::string emit(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return e.c_str();
}

// tokenizer_config.json's settings of BERT's tokenizer, each one headroom's BasicTokenizer + WordPiece can follow, or
// an error naming the file and the key.
struct TokenizerSettings {
  bool lower_case = true;
  std::optional<bool> strip_accents;  // null: follows lower_case
  int64_t max_len = 0;                // model_max_length when it is below max_position_embeddings, else 0
};

TokenizerSettings read_tokenizer_settings(const std::string& path, int64_t max_positions) {
  TokenizerSettings t;
  if (!fs::exists(path)) return t;
  const json j = read_json(path);
  const JsonFields c{j, path};
  t.lower_case = c.get<bool>("do_lower_case", true);
  if (j.contains("strip_accents") && !j.at("strip_accents").is_null()) t.strip_accents = c.get<bool>("strip_accents");
  if (!c.get<bool>("tokenize_chinese_chars", true))
    c.fail("tokenize_chinese_chars", "false is not supported: headroom's tokenizer always makes each CJK character a "
                                     "word of its own, as BERT's default does");
  if (!c.get<bool>("do_basic_tokenize", true))
    c.fail("do_basic_tokenize", "false is not supported: headroom's tokenizer always splits words (whitespace and "
                                "punctuation) before WordPiece");
  if (j.contains("never_split") && !j.at("never_split").is_null() && !j.at("never_split").empty())
    c.fail("never_split", "is not supported: headroom's tokenizer has no list of words kept whole");
  const std::string cls = c.get<std::string>("tokenizer_class", "BertTokenizer");
  if (cls != "BertTokenizer" && cls != "BertTokenizerFast")
    c.fail("tokenizer_class", "'" + cls + "' is not BERT's WordPiece tokenizer (BertTokenizer, BertTokenizerFast)");
  if (j.contains("model_max_length") && !j.at("model_max_length").is_null()) {
    // transformers writes int(1e30) when a checkpoint sets none: any length at or above the positions is no limit
    const json& v = j.at("model_max_length");
    if (!v.is_number() || v.get<double>() < 1) c.fail("model_max_length", "expected a positive number, got " + v.dump());
    if (v.get<double>() < static_cast<double>(max_positions)) {
      if (!v.is_number_integer()) c.fail("model_max_length", "expected an integer, got " + v.dump());
      t.max_len = v.get<int64_t>();
    }
  }
  return t;
}

// A sentence-transformers model directory keeps its pooling in the Pooling module's folder (modules.json names it,
// 1_Pooling by convention). Returns headroom's pooling for it ("mean" or "cls"; "" when there is no such config or
// headroom has no such pooling) and a note saying what was found.
std::pair<std::string, std::string> sentence_transformers_pooling(const fs::path& dir) {
  fs::path config = dir / "1_Pooling" / "config.json";
  if (const fs::path modules = dir / "modules.json"; fs::exists(modules)) {
    const json m = read_json(modules.string());
    if (m.is_array())
      for (const json& module : m)
        if (module.is_object() && module.value("type", "").ends_with("models.Pooling") && module.contains("path") &&
            module.at("path").is_string())
          config = dir / module.at("path").get<std::string>() / "config.json";
  }
  if (!fs::exists(config)) return {"", ""};
  const std::string path = config.string();
  const json j = read_json(path);
  std::vector<std::string> modes;
  for (const auto& [key, value] : j.items())
    if (key.starts_with("pooling_mode_") && value.is_boolean() && value.get<bool>()) modes.push_back(key.substr(13));
  std::string list;
  for (const auto& m : modes) list += (list.empty() ? "" : "+") + m;
  const std::string said = path + ": sentence-transformers pools by " + (list.empty() ? "nothing" : list);
  if (modes == std::vector<std::string>{"mean_tokens"}) return {"mean", said};
  if (modes == std::vector<std::string>{"cls_token"}) return {"cls", said};
  return {"", said + ", which headroom's classifier has no pooling for"};
}

}  // namespace

HfBertName map_hf_bert_name(const std::string& hf_name, const std::string& task) {
  std::string n = hf_name.starts_with("bert.") ? hf_name.substr(5) : hf_name;
  for (const auto& [legacy, now] : {std::pair{".gamma", ".weight"}, {".beta", ".bias"}}) {
    const std::string l = std::string("LayerNorm") + legacy;
    if (n.size() >= l.size() && n.compare(n.size() - l.size(), l.size(), l) == 0)
      n = n.substr(0, n.size() - std::string(legacy).size()) + now;
  }
  if (n == "embeddings.position_ids") return {HfBertName::buffer, ""};
  if (n.starts_with("cls.")) {  // the pretraining heads: BertForMaskedLM's cls.predictions is the mlm head
    if (task != "mlm") return {HfBertName::unused, ""};
    // the decoder is tied: its weight is the word embeddings, its bias cls.predictions.bias
    if (n == "cls.predictions.decoder.weight") return {HfBertName::tied, "embeddings.token"};
    if (n == "cls.predictions.decoder.bias") return {HfBertName::tied, "mlm.bias"};
    if (n.starts_with("cls.seq_relationship.")) return {HfBertName::unused, ""};  // BertForPreTraining's NSP head
  }
  if (n.starts_with("pooler.") && task != "classification") return {HfBertName::unused, ""};
  for (const auto& [hf, ours] : top_names()) {
    if (n != hf) continue;
    const std::string owner = head_task(ours);
    return owner.empty() || owner == task ? HfBertName{HfBertName::parameter, ours} : HfBertName{};
  }
  std::string index, rest, module, suffix;
  if (split_index(n, "encoder.layer.", index, rest) && split_suffix(rest, module, suffix))
    for (const auto& [hf, ours] : layer_modules())
      if (module == hf) return {HfBertName::parameter, "layers." + index + "." + ours + suffix};
  return {};
}

std::string hf_bert_name(const std::string& headroom_name) {
  for (const auto& [hf, ours] : top_names())
    if (headroom_name == ours)
      return hf.starts_with("classifier.") || hf.starts_with("qa_outputs.") || hf.starts_with("cls.") ? hf
                                                                                                  : "bert." + hf;
  std::string index, rest, module, suffix;
  if (split_index(headroom_name, "layers.", index, rest) && split_suffix(rest, module, suffix))
    for (const auto& [hf, ours] : layer_modules())
      if (module == ours) return "bert.encoder.layer." + index + "." + hf + suffix;
  throw Error("'" + headroom_name + "' has no name in BERT's format");
}

namespace {

// The three files an import needs; hr::Error naming the one missing (how to convert a pytorch_model.bin too).
struct HfFiles {
  std::string config, weights, vocab;
};

HfFiles hf_files(const std::string& hf_dir) {
  const fs::path dir(hf_dir);
  const HfFiles f{(dir / "config.json").string(), (dir / "model.safetensors").string(), (dir / "vocab.txt").string()};
  HR_CHECK(fs::exists(f.config), hf_dir + ": no config.json (not a Hugging Face model directory)");
  if (!fs::exists(f.weights)) {
    const std::string bin = (dir / "pytorch_model.bin").string();
    HR_CHECK(!fs::exists(bin),
             hf_dir + " holds pytorch_model.bin but no model.safetensors; convert it with\n  python -c \"import torch; "
             "from safetensors.torch import save_file; save_file({k: v.clone().contiguous() for k, v in torch.load('" +
                 bin + "', map_location='cpu').items()}, '" + f.weights + "', metadata={'format': 'pt'})\"");
    throw Error(hf_dir + ": no model.safetensors");
  }
  HR_CHECK(fs::exists(f.vocab), hf_dir + ": no vocab.txt (headroom imports BERT's WordPiece tokenizer)");
  return f;
}

// sentence-transformers' own limit on text length, said in a note: the run keeps BERT's.
void note_sentence_bert_length(const fs::path& dir, std::vector<std::string>& notes) {
  const std::string sb = (dir / "sentence_bert_config.json").string();
  if (!fs::exists(sb)) return;
  const json j = read_json(sb);
  if (j.is_object() && j.contains("max_seq_length") && j.at("max_seq_length").is_number_integer())
    notes.push_back(sb + ": sentence-transformers truncates texts to " + j.at("max_seq_length").dump() +
                    " tokens; the run keeps BERT's limit (--set data.max_seq_len=" + j.at("max_seq_length").dump() +
                    " to match)");
}

// vocab.txt has config.json's vocab_size tokens.
void check_vocab_size(const json& config, const HfFiles& files, const Vocab& vocab) {
  if (!config.contains("vocab_size") || config.at("vocab_size").is_null()) return;
  const int64_t n = JsonFields{config, files.config}.positive("vocab_size");
  HR_CHECK(n == vocab.size(), files.config + ": 'vocab_size' is " + std::to_string(n) + " but " + files.vocab +
                                  " has " + std::to_string(vocab.size()) + " tokens (lines)");
}

// The token embeddings have a row for each token of vocab.txt.
void check_embedding_rows(const SafeTensorsFile& f, const HfFiles& files, const Vocab& vocab, const std::string& task) {
  for (const auto& [name, t] : f.tensors)
    if (map_hf_bert_name(name, task).name == "embeddings.token" && !t.shape.empty())
      HR_CHECK(t.shape[0] == vocab.size(), files.weights + ": '" + name + "' has " + std::to_string(t.shape[0]) +
                                               " rows (token embeddings) but " + files.vocab + " has " +
                                               std::to_string(vocab.size()) + " tokens (lines)");
}

// A classifier without id2label: a trained one keeps transformers' default names (LABEL_<i>, which it leaves out
// of config.json); with none in the file (bert-base-uncased), the run holds no classifier and no labels.txt, and
// train.init_from initialises one for the training data's labels. Returns whether the labels come from the data.
bool default_labels(ImportPlan& plan, const SafeTensorsFile& f, const std::string& config_path,
                    std::vector<std::string>& notes) {
  if (!plan.classifier || !plan.labels.empty()) return false;
  for (const auto& [name, t] : f.tensors)
    if (map_hf_bert_name(name, "classification").name == "classifier.bias" && t.shape.size() == 1)
      for (int64_t i = 0; i < t.shape[0]; ++i) plan.labels.push_back("LABEL_" + std::to_string(i));
  if (plan.labels.empty()) return true;
  notes.push_back(config_path + " has no id2label: the classifier's " + std::to_string(plan.labels.size()) +
                  " labels are LABEL_0.. as transformers names them");
  return false;
}

// Where each parameter's values are in the file, and the tensors the model does not use.
struct TensorSources {
  std::map<std::string, std::string> source;  // headroom name -> tensor name in the file
  std::vector<std::string> unused, nsp;
  std::vector<std::pair<std::string, std::string>> tied;  // (tensor name in the file, the headroom name it copies)
};

// Every tensor of the file names a parameter, a buffer or an unused pretraining part; nothing else.
TensorSources tensor_sources(const SafeTensorsFile& f, const std::string& task, const std::string& pooling,
                             const std::string& weights) {
  TensorSources s;
  for (const auto& [name, t] : f.tensors) {
    HfBertName m = map_hf_bert_name(name, task);
    if (m.kind == HfBertName::parameter && m.name.starts_with("classifier.pooler.") && pooling != "cls_pooler")
      m = {HfBertName::unused, ""};  // BERT's pooler, and the classifier pools otherwise
    if (m.kind == HfBertName::tied) s.tied.emplace_back(name, m.name);
    if (m.kind == HfBertName::unused)
      (task == "mlm" && name.find("cls.seq_relationship.") != std::string::npos ? s.nsp : s.unused).push_back(name);
    if (m.kind != HfBertName::parameter && m.kind != HfBertName::unknown) continue;
    HR_CHECK(m.kind == HfBertName::parameter,
             weights + ": unexpected tensor '" + name + "' (not a parameter of BERT's encoder or of the " +
                 head_title(task) + " head)");
    const auto [it, fresh] = s.source.emplace(m.name, name);
    HR_CHECK(fresh, weights + ": '" + name + "' and '" + it->second + "' are the same parameter");
  }
  return s;
}

// The MLM decoder is tied, as in transformers: a stored decoder weight must be the word embeddings and a stored
// decoder bias cls.predictions.bias (transformers 4.57 keeps the embeddings and cls.predictions.bias and silently
// drops a copy that differs; headroom refuses rather than guess which the checkpoint meant), and a decoder bias
// without cls.predictions.bias is the output bias.
void check_tied(TensorSources& s, const SafeTensorsFile& f, const std::string& weights) {
  for (const auto& [name, ours] : s.tied) {
    const auto it = s.source.find(ours);
    if (it == s.source.end()) {
      if (ours == "mlm.bias") s.source.emplace(ours, name);
      continue;  // no word embeddings: the missing-tensor error names them
    }
    const SafeTensor &copy = f.tensors.at(name), &original = f.tensors.at(it->second);
    HR_CHECK(copy.shape == original.shape && to_f32(copy) == to_f32(original),
             weights + ": '" + name + "' differs from '" + it->second + "' (" +
                 (copy.shape == original.shape ? "same shape " + shape_str(copy.shape) + ", other values"
                                               : "shape " + shape_str(copy.shape) + " and " +
                                                     shape_str(original.shape)) +
                 "): BERT's masked-LM decoder is tied to it, and headroom's decodes with it");
  }
}

void note_unused(const TensorSources& s, const std::string& weights, std::vector<std::string>& notes) {
  if (!s.nsp.empty())
    notes.push_back(weights + ": the next-sentence head of BertForPreTraining (" + s.nsp.front() +
                    (s.nsp.size() > 1 ? ", ..." : "") +
                    ") is not used: headroom pretrains with the masked-LM task only");
  if (!s.unused.empty())
    notes.push_back(weights + ": " + std::to_string(s.unused.size()) + " tensors not used by this model (" +
                    s.unused.front() + (s.unused.size() > 1 ? ", ..." : "") + ")");
}

// Copies each parameter from its tensor. A head the file does not have is initialised and said in a note; with the
// labels from the data it is left out of the run's checkpoints (the returned names).
std::set<std::string> copy_parameters(EncoderModel& model, TensorSources& s, const SafeTensorsFile& f,
                                      const HfFiles& files, const std::string& task, bool labels_from_data,
                                      std::vector<std::string>& notes) {
  const std::string head = model.head().name();
  std::vector<std::string> initialised;
  std::set<std::string> left_out;
  for (auto& [name, param] : model.named_parameters()) {
    auto it = s.source.find(name);
    if (it == s.source.end()) {
      HR_CHECK(name.starts_with(head + "."), files.weights + ": tensor '" + hf_bert_name(name) + "' is missing");
      initialised.push_back(hf_bert_name(name));
      if (labels_from_data) left_out.insert(name);
      continue;
    }
    const SafeTensor& t = f.tensors.at(it->second);
    HR_CHECK(t.shape == param.shape(), files.weights + ": '" + it->second + "' has shape " + shape_str(t.shape) +
                                           ", " + files.config + " makes it " + shape_str(param.shape()));
    param.copy_from(Tensor::from_vector(to_f32(t), param.shape(), Device::CPU));
    s.source.erase(it);
  }
  for (const auto& [ours, name] : s.source)  // mapped, but no such parameter: e.g. a layer beyond num_hidden_layers
    throw Error(files.weights + ": unexpected tensor '" + name + "' (" + files.config + " has no place for it)");
  if (initialised.empty()) return left_out;
  std::string list;
  for (const auto& n : initialised) list += (list.empty() ? "" : ", ") + n;
  if (labels_from_data)
    notes.push_back(files.weights + " has no sequence classifier and " + files.config + " no labels (id2label): the " +
                    "run leaves out " + list + ", which `train --set train.init_from=...` initialises for the " +
                    "training data's labels");
  else
    notes.push_back(files.weights + " has no " + head_title(task) + " head: initialised (" + list + ")");
  return left_out;
}

// The imported run's config.yaml: the model, BERT's tokenizer settings, its task's data keys and BERT's usual
// fine-tuning.
YAML::Node imported_run_config(const ImportPlan& plan, const TokenizerSettings& tok, const std::string& out_dir) {
  YAML::Node root;
  root["model"] = plan.model;
  root["tokenizer"]["vocab"] = fs::absolute(fs::path(out_dir) / "vocab.txt").lexically_normal().string();
  root["tokenizer"]["lower_case"] = tok.lower_case;
  if (tok.strip_accents) root["tokenizer"]["strip_accents"] = *tok.strip_accents;
  root["data"]["task"] = plan.classifier ? "classification" : plan.task == "span_qa" ? "squad" : "mlm";
  root["data"]["format"] = plan.classifier ? "jsonl" : plan.task == "span_qa" ? "squad" : "text";
  if (tok.max_len > 0) root["data"]["max_seq_len"] = tok.max_len;  // tokenizer_config.json's model_max_length
  // the question may take half the window (a checkpoint with a short max_len still fits a question and context)
  if (plan.task == "span_qa") root["data"]["max_query_len"] = std::min<int64_t>(64, plan.max_len / 2);
  root["train"]["lr"] = number(3e-5);  // BERT's usual fine-tuning
  root["train"]["epochs"] = 2;
  root["train"]["batch_size"] = 32;
  root["train"]["warmup"] = number(0.1);
  return root;
}

}  // namespace

std::vector<std::string> import_hf_bert(const HfImportArgs& a) {
  const HfFiles files = hf_files(a.dir);
  require_new_or_empty_dir(a.out_dir);
  // the classifier's pooling: --pooling, else sentence-transformers' (mean or cls) when the directory has its
  // pooling config, else BERT's pooler
  const auto [st_pooling, st_note] = sentence_transformers_pooling(a.dir);
  const std::string pooling = !a.pooling.empty() ? a.pooling : !st_pooling.empty() ? st_pooling : "cls_pooler";
  const json config = read_json(files.config);
  ImportPlan plan = plan_model(config, files.config, a.task, pooling);
  if (!a.pooling.empty() && !plan.classifier)
    throw UsageError("--pooling is the sequence classifier's; a span QA or MLM model has none");
  std::vector<std::string> notes = plan.notes;
  if (!st_note.empty()) notes.push_back(st_note + (plan.classifier ? ": the classifier uses pooling: " + pooling : ""));
  note_sentence_bert_length(a.dir, notes);
  const TokenizerSettings tok = read_tokenizer_settings((fs::path(a.dir) / "tokenizer_config.json").string(),
                                                        plan.max_len);
  const Vocab vocab = Vocab::load(files.vocab);
  check_vocab_size(config, files, vocab);
  const SafeTensorsFile f = read_safetensors(files.weights);
  check_embedding_rows(f, files, vocab, plan.task);
  if (const std::string n = checksum_note(files.weights, f); !n.empty()) notes.push_back(n);
  const bool labels_from_data = default_labels(plan, f, files.config, notes);

  ModelDims dims;
  dims.vocab_size = vocab.size();
  dims.num_labels = labels_from_data ? 1 : static_cast<int64_t>(plan.labels.size());  // 1: left out of the run
  if (plan.task == "mlm") dims.num_labels = 0;
  dims.segments = plan.segments;
  std::unique_ptr<EncoderModel> model = build_model(Config::parse(emit(plan.model), files.config), dims);
  TensorSources sources = tensor_sources(f, plan.task, pooling, files.weights);
  check_tied(sources, f, files.weights);
  note_unused(sources, files.weights, notes);
  const std::set<std::string> left_out =
      copy_parameters(*model, sources, f, files, plan.task, labels_from_data, notes);

  fs::create_directories(a.out_dir);
  write_file_atomically(a.out_dir + "/config.yaml",
                        [&](std::ostream& o) { o << emit(imported_run_config(plan, tok, a.out_dir)) << "\n"; });
  vocab.save(a.out_dir + "/vocab.txt");
  if (plan.classifier && !labels_from_data)
    write_file_atomically(a.out_dir + "/labels.txt", [&](std::ostream& o) {
      for (const auto& l : plan.labels) o << l << "\n";
    });
  for (const char* which : {"best", "last"})
    save_weights(a.out_dir + "/checkpoint-" + which + ".safetensors", *model, left_out);
  return notes;
}

namespace {

// The BERT attention of layer i: the layer's attention, or an error naming what BERT cannot express.
const MultiHeadAttention& bert_attention(const EncoderModel& model, size_t i, const std::string& run) {
  const auto* layer = dynamic_cast<const EncoderLayer*>(&model.layer(i));
  HR_CHECK(layer, run + ": layer " + std::to_string(i) + " is not an encoder layer: BERT has no such layer");
  const AttentionOptions& o = layer->attn.options();
  const std::string where = run + ": layer " + std::to_string(i) + " has ";
  HR_CHECK(!o.talking_heads, where + "talking heads, which BERT does not have");
  HR_CHECK(!o.cross_layer, where + "cross-layer attention logits, which BERT does not have");
  HR_CHECK(!o.gates, where + "L0 gates not yet pruned (headroom prune folds them into the weights first)");
  return layer->attn;
}

// Where an export may write: a new or empty directory, with `force` one that holds other files (a user's notes, an
// earlier export), never a run directory (its vocab.txt is the run's own) nor the run it exports.
void check_export_dir(const HfExportArgs& a) {
  const fs::path out(a.out_dir);
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec)) throw UsageError("--out " + a.out_dir + " is a file, not a directory");
  const bool run = fs::exists(out / "config.yaml") || fs::exists(out / "checkpoint-best.safetensors") ||
                   fs::exists(out / "checkpoint-last.safetensors") || fs::equivalent(out, a.run_dir, ec);
  if (run)
    throw UsageError("--out " + a.out_dir + " is a headroom run directory: export-hf never writes into one (not even "
                     "with --force); choose a new directory");
  if (!a.force)
    require_new_or_empty_dir(a.out_dir, ", or add --force to replace config.json, model.safetensors, vocab.txt and "
                                        "tokenizer_config.json in it");
}

// What BERT's config.json cannot say: another head, pre-LN, a classifier without the pooler, no segment embeddings.
void check_bert_head(const EncoderModel& model, const YAML::Node& m, const std::string& r) {
  const bool classifier = model.type() == "encoder_classifier";
  HR_CHECK(classifier || model.type() == "encoder_mlm" || model.type() == "encoder_span_qa",
           r + ": model.type " + model.type() + " has no BERT head (encoder_classifier, encoder_span_qa or "
                                                "encoder_mlm)");
  HR_CHECK((m["norm"] ? m["norm"].as<std::string>() : "pre") == "post", r + ": a pre-LN model is not BERT (norm: post)");
  HR_CHECK(!classifier || (m["pooling"] && m["pooling"].as<std::string>() == "cls_pooler"),
           r + ": BERT's sequence classifier needs the pooler (pooling: cls_pooler)");
  HR_CHECK(model.segments() > 0, r + ": the model has no segment embeddings, which BERT has (model.segments)");
}

// What every layer of a BERT shares, and the heads pruning removed from each.
struct BertShape {
  int64_t hidden = 0, heads = 0, ffn = 0;  // hidden_size, num_attention_heads (unpruned), intermediate_size
  json pruned_heads = json::object();      // {"layer": [original indices of the removed heads]}
};

// Layer i's removed heads (by their original index; none for an unpruned layer), or an error naming what in the layer
// BERT cannot express.
json removed_heads(const EncoderModel& model, size_t i, const BertShape& s, const std::string& r) {
  const MultiHeadAttention& attn = bert_attention(model, i, r);
  const int64_t Dh = s.hidden / s.heads;
  const std::string where = r + ": layer " + std::to_string(i) + " ";
  HR_CHECK(attn.head_dim() == Dh, where + "has head_dim " + std::to_string(attn.head_dim()) + " and layer 0 " +
                                      std::to_string(Dh) + ": BERT's head size is hidden / heads in every layer");
  HR_CHECK(dynamic_cast<const EncoderLayer&>(model.layer(i)).ffn.in.weight.dim(0) == s.ffn,
           where + "has another ffn_dim than layer 0: BERT has one intermediate_size");
  HR_CHECK(attn.num_heads() > 0, where + "has no heads left, which transformers cannot load (all heads pruned)");
  const std::vector<int64_t>& kept = attn.options().original_heads;
  json removed = json::array();
  if (kept.empty()) {
    HR_CHECK(attn.num_heads() == s.heads, where + "has " + std::to_string(attn.num_heads()) + " heads of " +
                                              std::to_string(Dh) + ", and hidden / head_dim = " +
                                              std::to_string(s.heads) + ": BERT's head size is hidden / heads " +
                                              "(attention.original_heads would say which heads were pruned)");
    return removed;
  }
  HR_CHECK(kept.back() < s.heads, where + "names original head " + std::to_string(kept.back()) + " of " +
                                      std::to_string(s.heads));
  for (int64_t h = 0; h < s.heads; ++h)
    if (!std::binary_search(kept.begin(), kept.end(), h)) removed.push_back(h);
  return removed;
}

// BERT numbers heads by the unpruned layer of d_model / head_dim heads; pruned_heads lists the removed ones.
BertShape bert_shape(const EncoderModel& model, const std::string& r) {
  BertShape s;
  s.hidden = model.d_model();
  const int64_t Dh = bert_attention(model, 0, r).head_dim();
  HR_CHECK(s.hidden % Dh == 0, r + ": head_dim " + std::to_string(Dh) + " does not divide d_model " +
                                   std::to_string(s.hidden) + ": BERT's head size is hidden / heads");
  s.heads = s.hidden / Dh;
  s.ffn = dynamic_cast<const EncoderLayer&>(model.layer(0)).ffn.in.weight.dim(0);
  for (size_t i = 0; i < model.num_layers(); ++i)
    if (json removed = removed_heads(model, i, s, r); !removed.empty()) s.pruned_heads[std::to_string(i)] = removed;
  return s;
}

// config.json: the architecture with its head, the sizes, the dropouts, and a classifier's labels.
json bert_config(const LoadedRun& run, const YAML::Node& m, const BertShape& s) {
  const EncoderModel& model = *run.model;
  const bool classifier = model.type() == "encoder_classifier", mlm = model.type() == "encoder_mlm";
  const char* architecture = classifier ? "BertForSequenceClassification"
                             : mlm      ? "BertForMaskedLM"
                                        : "BertForQuestionAnswering";
  const double dropout = m["dropout"] ? m["dropout"].as<double>() : 0.1;
  json c = {{"architectures", {architecture}},
            {"model_type", "bert"},
            {"vocab_size", run.tokenizer->vocab().size()},
            {"hidden_size", s.hidden},
            {"num_hidden_layers", model.num_layers()},
            {"num_attention_heads", s.heads},
            {"intermediate_size", s.ffn},
            {"hidden_act", "gelu"},
            {"hidden_dropout_prob", dropout},
            {"attention_probs_dropout_prob", m["attention_dropout"] ? m["attention_dropout"].as<double>() : dropout},
            {"max_position_embeddings", model.max_len()},
            {"type_vocab_size", model.segments()},
            {"initializer_range", 0.02},
            {"layer_norm_eps", m["layer_norm_eps"] ? m["layer_norm_eps"].as<double>() : 1e-5},
            {"pad_token_id", run.tokenizer->vocab().pad_id()},
            {"position_embedding_type", "absolute"},
            {"torch_dtype", "float32"}};
  if (!s.pruned_heads.empty()) c["pruned_heads"] = s.pruned_heads;
  // the decoder is the word embeddings (transformers' default, said as BertForMaskedLM checkpoints say it); its
  // weight and bias (cls.predictions.bias) are not written again, as save_pretrained leaves them out
  if (mlm) c["tie_word_embeddings"] = true;
  if (classifier) {
    const auto& labels = dynamic_cast<const ClassificationTask&>(*run.task).labels().labels();
    for (size_t i = 0; i < labels.size(); ++i) {
      c["id2label"][std::to_string(i)] = labels[i];
      c["label2id"][labels[i]] = i;
    }
  }
  return c;
}

// tokenizer_config.json: the run's tokenizer settings as BertTokenizer names them.
json bert_tokenizer_config(const LoadedRun& run) {
  const RunConfig& rc = run.config;
  json tok = {{"do_lower_case", rc.tokenizer.lower_case},
              {"strip_accents", nullptr},
              {"tokenize_chinese_chars", true},
              {"model_max_length", rc.data.max_seq_len > 0 ? rc.data.max_seq_len : run.model->max_len()},
              {"tokenizer_class", "BertTokenizer"}};
  if (rc.tokenizer.strip_accents) tok["strip_accents"] = *rc.tokenizer.strip_accents;
  return tok;
}

// model.safetensors: every parameter under its BERT name.
SafeTensorsFile bert_weights(const EncoderModel& model) {
  SafeTensorsFile f;
  f.metadata["format"] = "pt";  // transformers loads safetensors files that say they hold PyTorch tensors
  for (const auto& [name, t] : model.named_parameters()) {
    const std::vector<float> v = t.to_vector();
    f.tensors[hf_bert_name(name)] = from_f32(t.shape(), v.data());
  }
  return f;
}

}  // namespace

void export_hf_bert(const HfExportArgs& a) {
  check_export_dir(a);
  LoadedRun run = load_run(a.run_dir, a.which, /*load_data=*/false);
  const YAML::Node m = YAML::Load(run.config.root.child("model").dump());
  check_bert_head(*run.model, m, a.run_dir);
  const json config = bert_config(run, m, bert_shape(*run.model, a.run_dir));
  fs::create_directories(a.out_dir);
  write_safetensors(a.out_dir + "/model.safetensors", bert_weights(*run.model));
  run.tokenizer->vocab().save(a.out_dir + "/vocab.txt");
  const json tok = bert_tokenizer_config(run);
  write_file_atomically(a.out_dir + "/tokenizer_config.json", [&](std::ostream& o) { o << tok.dump(2) << "\n"; });
  write_file_atomically(a.out_dir + "/config.json", [&](std::ostream& o) { o << config.dump(2) << "\n"; });
}

}  // namespace hr
