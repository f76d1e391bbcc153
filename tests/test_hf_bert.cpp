// Hugging Face BERT checkpoints imported as headroom runs (train/tools/hf_bert.h): the tiny checkpoints of
// tests/fixtures/hf_bert reproduce transformers' outputs, the tokenizer reproduces its input ids, every bad tensor is
// an error naming it and the file, and an imported model fine-tunes through the normal trainer.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "framework/autograd.h"
#include "framework/safetensors.h"
#include "models/head_pruning.h"
#include "models/task_heads.h"
#include "tests/error_message.h"
#include "tests/repo_files.h"
#include "tests/tiny_run.h"
#include "train/run/trainer.h"
#include "train/tasks/qa_task.h"
#include "train/tokenizer/vocab.h"
#include "train/tools/hf_bert.h"

using namespace hr;
using namespace hr::testing;

namespace {

// The reference rows without their padding, and their token types.
struct ReferenceInput {
  std::vector<std::vector<int32_t>> ids, segments;
  int64_t T = 0;
};

ReferenceInput reference_input(const SafeTensorsFile& ref) {
  const SafeTensor& ids = ref.tensors.at("input_ids");
  const std::vector<int64_t> id = to_i64(ids), seg = to_i64(ref.tensors.at("token_type_ids")),
                             mask = to_i64(ref.tensors.at("attention_mask"));
  ReferenceInput in;
  in.T = ids.shape[1];
  for (int64_t b = 0; b < ids.shape[0]; ++b) {
    in.ids.emplace_back();
    in.segments.emplace_back();
    for (int64_t t = 0; t < in.T; ++t) {
      const size_t i = static_cast<size_t>(b * in.T + t);
      if (mask[i] == 0) continue;
      in.ids.back().push_back(static_cast<int32_t>(id[i]));
      in.segments.back().push_back(static_cast<int32_t>(seg[i]));
    }
  }
  return in;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0.f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Element k of each (B, T, 2) row: the start (0) or end (1) logits as (B, T).
std::vector<float> column(const std::vector<float>& btk, size_t k) {
  std::vector<float> out;
  for (size_t i = k; i < btk.size(); i += 2) out.push_back(btk[i]);
  return out;
}

void copy_dir(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), fs::path(to) / e.path().filename());
}

// The message of the hr::Error an import throws ("" when it succeeds).
std::string import_error(const std::string& dir, const std::string& out, const std::string& task = "") {
  return hr::testing::error_message([&] { import_hf_bert({dir, out, task, ""}); });
}

// A copy of a fixture whose model.safetensors `edit` changed.
std::string edited_copy(const TempDir& d, const std::string& fixture, const std::function<void(SafeTensorsFile&)>& edit) {
  const std::string dir = d / ("edited-" + fixture);
  fs::remove_all(dir);
  copy_dir(hf_fixture(fixture), dir);
  SafeTensorsFile f = read_safetensors(dir + "/model.safetensors");
  edit(f);
  write_safetensors(dir + "/model.safetensors", f);
  return dir;
}

// Six labelled texts in the fixtures' vocabulary, as JSONL {"text", "label"}.
void write_label_rows(const std::string& path) {
  std::string rows;
  const std::pair<const char*, const char*> texts[] = {
      {"hello there", "greeting"}, {"what is the weather in paris", "weather"}, {"play the alarm at 5", "alarm"},
      {"hi", "greeting"}, {"is it cold in london", "weather"}, {"set an alarm", "alarm"}};
  for (const auto& [text, label] : texts) rows += nlohmann::json{{"text", text}, {"label", label}}.dump() + "\n";
  write_file(path, rows);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("imported BERT checkpoints reproduce transformers' hidden states, pooler and logits") {
  for (const std::string name : {"bert_tiny_qa", "bert_tiny_cls", "bert_tiny_qa_pruned", "bert_tiny_mlm"}) {
    CAPTURE(name);
    TempDir d;
    import_hf_bert({hf_fixture(name), d / "run", "", ""});
    LoadedRun run = load_run(d / "run", "best", /*load_data=*/false);
    EncoderModel& model = *run.model;
    const SafeTensorsFile ref = read_safetensors(hf_fixture(name + "/reference.safetensors"));
    const ReferenceInput in = reference_input(ref);
    const EncoderInput input = make_encoder_input(in.ids, 0, Device::CPU, &in.segments);
    REQUIRE(input.ids.dim(1) == in.T);  // the longest row has no padding: positions line up
    model.eval();
    NoGradGuard ng;
    const Tensor hidden = model.hidden_states(input);  // (B, T, D)
    CHECK(max_abs_diff(hidden.to_vector(), to_f32(ref.tensors.at("last_hidden_state"))) <= 1e-4f);
    const std::vector<float> out = model.head().forward(hidden, input).to_vector();
    if (name == "bert_tiny_cls") {
      // a classifier's input without segment ids (one text) is all segment 0, as BERT's default token_type_ids
      std::vector<std::vector<int32_t>> zeros;
      for (const auto& row : in.ids) zeros.emplace_back(row.size(), 0);
      CHECK(model.forward(make_encoder_input(in.ids, 0, Device::CPU)).to_vector() ==
            model.forward(make_encoder_input(in.ids, 0, Device::CPU, &zeros)).to_vector());
      const auto& head = dynamic_cast<const SequenceClassifierHead&>(model.head());
      CHECK(max_abs_diff(head.pool(hidden, input).to_vector(), to_f32(ref.tensors.at("pooler_output"))) <= 1e-4f);
      CHECK(max_abs_diff(out, to_f32(ref.tensors.at("logits"))) <= 1e-4f);
    } else if (name == "bert_tiny_mlm") {  // MlmHead::forward decodes every position: (B, T, V)
      CHECK(model.type() == "encoder_mlm");
      CHECK(max_abs_diff(out, to_f32(ref.tensors.at("prediction_logits"))) <= 1e-4f);
    } else {
      CHECK(max_abs_diff(column(out, 0), to_f32(ref.tensors.at("start_logits"))) <= 1e-4f);
      CHECK(max_abs_diff(column(out, 1), to_f32(ref.tensors.at("end_logits"))) <= 1e-4f);
    }
  }
}

TEST_CASE("the imported tokenizer encodes the README's question/context pairs as BERT does") {
  TempDir d;
  import_hf_bert({hf_fixture("bert_tiny_qa"), d / "run", "", ""});
  LoadedRun run = load_run(d / "run", "best", /*load_data=*/false);
  const Tokenizer& tok = *run.tokenizer;
  const ReferenceInput ref = reference_input(read_safetensors(hf_fixture("bert_tiny_qa/reference.safetensors")));
  const std::pair<const char*, const char*> texts[] = {
      {"Where was the king born?", "The king was born in Paris, the largest city of France."},
      {"What river?", "The oldest river of England"}};
  for (size_t r = 0; r < 2; ++r) {
    const auto windows = make_qa_windows(tok.vocab(), tok.encode(texts[r].first).ids, tok.encode(texts[r].second).ids,
                                         QaWindowing{run.model->max_len(), 20, 128}, {});
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].ids == ref.ids[r]);
    CHECK(windows[0].segments == ref.segments[r]);
  }
}

TEST_CASE("import writes a run directory: config, vocabulary, labels, checkpoints without optimizer state") {
  TempDir d;
  const std::vector<std::string> notes = import_hf_bert({hf_fixture("bert_tiny_cls"), d / "run", "", ""});
  CHECK(read_file(d / "run/labels.txt") == "greeting\nweather\nalarm\n");
  CHECK(read_file(d / "run/vocab.txt") == read_file(hf_fixture("bert_tiny_cls/vocab.txt")));
  const std::string config = read_file(d / "run/config.yaml");
  for (const char* key : {"norm: post", "pooling: cls_pooler", "segments: 2", "layer_norm_eps: 1e-12", "repeat: 2",
                          "activation_dropout: 0"})
    CHECK_MESSAGE(config.find(key) != std::string::npos, key);
  const SafeTensorsFile best = read_safetensors(d / "run/checkpoint-best.safetensors");
  CHECK(best.metadata.at("optimizer") == "none");
  CHECK(best.tensors.count("classifier.pooler.weight") == 1);
  const SafeTensorsFile last = read_safetensors(d / "run/checkpoint-last.safetensors");
  CHECK(last.tensors.size() == best.tensors.size());
  // the pruned checkpoint: one group per layer, the kept heads by their original indices
  import_hf_bert({hf_fixture("bert_tiny_qa_pruned"), d / "pruned", "", ""});
  const std::string pruned = read_file(d / "pruned/config.yaml");
  CHECK(pruned.find("original_heads: [0, 2]") != std::string::npos);
  CHECK(pruned.find("original_heads: [0, 1, 3]") != std::string::npos);
  CHECK(import_error(hf_fixture("bert_tiny_cls"), d / "run").find("already holds a run") != std::string::npos);
}

TEST_CASE("tensor names as found in the wild: no bert. prefix, LayerNorm gamma/beta, bfloat16, cls.* heads") {
  TempDir d;
  import_hf_bert({hf_fixture("bert_tiny_cls"), d / "plain", "", ""});
  const std::string dir = edited_copy(d, "bert_tiny_cls", [](SafeTensorsFile& f) {
    SafeTensorsFile g;
    for (auto& [name, t] : f.tensors) {
      std::string n = name.rfind("bert.", 0) == 0 ? name.substr(5) : name;
      if (n.size() > 16 && n.compare(n.size() - 16, 16, "LayerNorm.weight") == 0) n = n.substr(0, n.size() - 6) + "gamma";
      if (n.size() > 14 && n.compare(n.size() - 14, 14, "LayerNorm.bias") == 0) n = n.substr(0, n.size() - 4) + "beta";
      g.tensors[n] = t;
    }
    // bfloat16 is the upper half of a float32: the import must give back exactly those floats
    SafeTensor& w = g.tensors.at("classifier.weight");
    SafeTensor bf{"BF16", w.shape, {}};
    for (size_t i = 0; i < w.bytes.size(); i += 4) bf.bytes.insert(bf.bytes.end(), {w.bytes[i + 2], w.bytes[i + 3]});
    w = bf;
    const float one = 1.f;
    g.tensors["cls.predictions.bias"] = from_f32({1}, &one);
    f = g;
  });
  const auto notes = import_hf_bert({dir, d / "renamed", "", ""});
  bool said_unused = false;
  for (const auto& n : notes) said_unused = said_unused || n.find("cls.predictions.bias") != std::string::npos;
  CHECK(said_unused);
  const SafeTensorsFile a = read_safetensors(d / "plain/checkpoint-best.safetensors"),
                        b = read_safetensors(d / "renamed/checkpoint-best.safetensors");
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    CAPTURE(name);
    std::vector<float> want = to_f32(t);
    if (name == "classifier.weight")
      for (float& x : want) {
        uint32_t u;
        std::memcpy(&u, &x, 4);
        u &= 0xffff0000u;
        std::memcpy(&x, &u, 4);
      }
    CHECK(to_f32(b.tensors.at(name)) == want);
  }
}

TEST_CASE("an unknown, missing or mis-shaped tensor is an error naming it and the file") {
  TempDir d;
  const std::string extra = edited_copy(d, "bert_tiny_qa", [](SafeTensorsFile& f) {
    f.tensors["bert.encoder.layer.0.attention.self.rotary.weight"] = f.tensors.at("qa_outputs.bias");
  });
  std::string e = import_error(extra, d / "a");
  CHECK(e.find(extra + "/model.safetensors") != std::string::npos);
  CHECK(e.find("'bert.encoder.layer.0.attention.self.rotary.weight'") != std::string::npos);

  const std::string beyond = edited_copy(d, "bert_tiny_qa", [](SafeTensorsFile& f) {
    f.tensors["bert.encoder.layer.2.output.dense.bias"] = f.tensors.at("bert.encoder.layer.1.output.dense.bias");
  });
  CHECK(import_error(beyond, d / "b").find("'bert.encoder.layer.2.output.dense.bias'") != std::string::npos);

  const std::string missing = edited_copy(d, "bert_tiny_qa", [](SafeTensorsFile& f) {
    f.tensors.erase("bert.encoder.layer.1.output.dense.bias");
  });
  e = import_error(missing, d / "c");
  CHECK(e.find(missing + "/model.safetensors") != std::string::npos);
  CHECK(e.find("'bert.encoder.layer.1.output.dense.bias' is missing") != std::string::npos);

  const std::string shape = edited_copy(d, "bert_tiny_qa", [](SafeTensorsFile& f) {
    f.tensors.at("bert.encoder.layer.0.attention.self.key.weight") = f.tensors.at("bert.pooler.dense.weight");
    SafeTensor& k = f.tensors.at("bert.encoder.layer.0.attention.self.key.weight");
    k.shape = {16, 64};
  });
  e = import_error(shape, d / "d");
  CHECK(e.find("'bert.encoder.layer.0.attention.self.key.weight' has shape (16, 64)") != std::string::npos);
  CHECK(e.find("makes it (32, 32)") != std::string::npos);

  // the other task's head is no part of this model
  CHECK(import_error(hf_fixture("bert_tiny_cls"), d / "e", "span_qa").find("'classifier.bias'") !=
        std::string::npos);
}

TEST_CASE("a missing task head is initialised and said once; what BERT's config asks headroom cannot do is named") {
  TempDir d;
  const std::string base = edited_copy(d, "bert_tiny_cls", [](SafeTensorsFile& f) {
    f.tensors.erase("classifier.weight");
    f.tensors.erase("classifier.bias");
  });
  const auto notes = import_hf_bert({base, d / "run", "", ""});
  int said = 0;
  for (const auto& n : notes) said += n.find("classifier.weight") != std::string::npos;
  CHECK(said == 1);

  const std::string relu = d / "relu";
  copy_dir(hf_fixture("bert_tiny_qa"), relu);
  std::string config = read_file(relu + "/config.json");
  config.replace(config.find("\"gelu\""), 6, "\"relu\"");
  write_file(relu + "/config.json", config);
  std::string e = import_error(relu, d / "r");
  CHECK(e.find(relu + "/config.json") != std::string::npos);
  CHECK(e.find("'hidden_act': 'relu'") != std::string::npos);

  const std::string bin = d / "bin";
  copy_dir(hf_fixture("bert_tiny_qa"), bin);
  fs::rename(bin + "/model.safetensors", bin + "/pytorch_model.bin");
  e = import_error(bin, d / "b");
  CHECK(e.find("pytorch_model.bin") != std::string::npos);
  CHECK(e.find("safetensors.torch import save_file") != std::string::npos);
}

TEST_CASE("pruning an imported pruned model composes the original head indices") {
  TempDir d;
  import_hf_bert({hf_fixture("bert_tiny_qa_pruned"), d / "run", "", ""});
  LoadedRun run = load_run(d / "run", "best", /*load_data=*/false);
  PrunePlan plan;
  plan.attention = {true, true};
  plan.heads = {2, 3};
  plan.keep = {{1}, {0, 2}};  // of the original heads [0, 2] and [0, 1, 3]
  const PrunedModel pruned = prune_model(*run.model, run.config.root.child("model"), plan);
  CHECK(pruned.model_yaml.find("original_heads: [2]") != std::string::npos);
  CHECK(pruned.model_yaml.find("original_heads: [0, 3]") != std::string::npos);
}

TEST_CASE("headroom import-hf, then predict, eval and a fine-tune through the normal trainer") {
  TempDir d;
  const std::string run = d / "run";
  Result r = headroom("import-hf " + quote(hf_fixture("bert_tiny_qa")) + " --out " + quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  r = headroom("predict --run " + quote(run) + " --question 'where was the king born?' --context 'the king was born "
               "in paris.'");
  CHECK_MESSAGE(r.code == 0, r.output);
  // info on the run's config counts the run's own vocabulary (its config names none)
  r = headroom("info " + quote(run + "/config.yaml"));
  CHECK_MESSAGE(r.output.find(": vocabulary " + std::to_string(Vocab::load(run + "/vocab.txt").size()) + ",") !=
                    std::string::npos,
                r.output);
  // ... and so does bench: the parameters it times are the run's
  const std::string total = r.output.substr(r.output.find("total: ") + 7);
  r = headroom("bench " + quote(run + "/config.yaml") +
               " --batch 2 --seq-len 16 --steps 1 --warmup 0 --inference-runs 1 --json");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("\"parameters\":" + total.substr(0, total.find(' ')) + ",") != std::string::npos);

  // a tiny SQuAD file in the fixture's vocabulary
  const std::vector<std::array<std::string, 3>> qa = {
      {"where was the king born?", "the king was born in paris, the largest city of france.", "paris"},
      {"where was the queen born?", "the queen was born in london, the largest city of england.", "london"},
      {"where did the king die?", "the king died in london in 1 year.", "london"},
      {"what is the largest city of france?", "paris is the largest city of france.", "paris"},
      {"who was born in paris?", "the queen was born in paris.", "the queen"},
      {"what river is the oldest?", "the oldest river of england is in london.", "london"}};
  write_squad(d / "squad.json", qa);

  r = headroom("eval --run " + quote(run) + " --data " + quote(d / "squad.json"));
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("f1") != std::string::npos);

  r = headroom("train --quiet " + quote(run + "/config.yaml") + " --out " + quote(d / "ft") +
               " --set data.train_path=" + quote(d / "squad.json") + " --set train.init_from=" +
               quote(run + "/checkpoint-best.safetensors") +
               " --set train.max_steps=24 --set train.batch_size=3 --set train.lr=2e-3 --set train.warmup=0"
               " --set train.schedule=constant --set train.log_every=1");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto loss = losses(d / "ft");
  REQUIRE(loss.size() == 24);
  double first = 0, last = 0;
  for (int64_t s = 1; s <= 4; ++s) first += loss.at(s);
  for (int64_t s = 21; s <= 24; ++s) last += loss.at(s);
  CHECK(last < 0.5 * first);
}

TEST_CASE("export-hf gives back the imported checkpoints bit-exactly, and importing an export is bit-exact") {
  for (const std::string name : {"bert_tiny_qa", "bert_tiny_cls", "bert_tiny_qa_pruned", "bert_tiny_mlm"}) {
    CAPTURE(name);
    TempDir d;
    import_hf_bert({hf_fixture(name), d / "run", "", ""});
    export_hf_bert({d / "run", "best", d / "hf"});
    const SafeTensorsFile original = read_safetensors(hf_fixture(name + "/model.safetensors")),
                          exported = read_safetensors(d / "hf/model.safetensors");
    for (const auto& [n, t] : exported.tensors) {
      CAPTURE(n);
      REQUIRE(original.tensors.count(n) == 1);
      CHECK(t.dtype == original.tensors.at(n).dtype);
      CHECK(t.shape == original.tensors.at(n).shape);
      CHECK(t.bytes == original.tensors.at(n).bytes);
    }
    // what is left out: the position_ids buffer, and the pooler that BertForQuestionAnswering does not have
    for (const auto& [n, t] : original.tensors)
      if (!exported.tensors.count(n))
        CHECK_MESSAGE((n == "bert.embeddings.position_ids" || (name != "bert_tiny_cls" && n.rfind("bert.pooler.", 0) == 0)),
                      n);
    const nlohmann::json a = nlohmann::json::parse(read_file(hf_fixture(name + "/config.json"))),
                         b = nlohmann::json::parse(read_file(d / "hf/config.json"));
    for (const char* key : {"architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
                            "intermediate_size", "max_position_embeddings", "type_vocab_size", "layer_norm_eps"})
      CHECK_MESSAGE(a[key] == b[key], key);
    CHECK(a.value("pruned_heads", nlohmann::json()) == b.value("pruned_heads", nlohmann::json()));
    CHECK(a.value("id2label", nlohmann::json()) == b.value("id2label", nlohmann::json()));
    CHECK(read_file(d / "hf/vocab.txt") == read_file(hf_fixture(name + "/vocab.txt")));

    // BertForMaskedLM: the decoder tied and not stored (neither its weight nor its bias), as save_pretrained writes it
    if (name == "bert_tiny_mlm") {
      CHECK(b["tie_word_embeddings"] == true);
      CHECK(exported.tensors.count("cls.predictions.bias") == 1);
      CHECK(exported.tensors.count("cls.predictions.decoder.weight") == 0);
      CHECK(exported.tensors.count("cls.predictions.decoder.bias") == 0);
      CHECK(exported.tensors.size() == original.tensors.size() - 1);  // all but position_ids
    }

    import_hf_bert({d / "hf", d / "again", "", ""});
    const SafeTensorsFile x = read_safetensors(d / "run/checkpoint-best.safetensors"),
                          y = read_safetensors(d / "again/checkpoint-best.safetensors");
    REQUIRE(x.tensors.size() == y.tensors.size());
    for (const auto& [n, t] : x.tensors) CHECK_MESSAGE(t.bytes == y.tensors.at(n).bytes, n);
    // export -> import -> export: the same files
    export_hf_bert({d / "again", "best", d / "hf2"});
    CHECK(read_file(d / "hf2/config.json") == read_file(d / "hf/config.json"));
    CHECK(read_file(d / "hf2/tokenizer_config.json") == read_file(d / "hf/tokenizer_config.json"));
    const SafeTensorsFile twice = read_safetensors(d / "hf2/model.safetensors");
    REQUIRE(twice.tensors.size() == exported.tensors.size());
    for (const auto& [n, t] : exported.tensors) {
      CAPTURE(n);
      REQUIRE(twice.tensors.count(n) == 1);
      CHECK(twice.tensors.at(n).dtype == t.dtype);
      CHECK(twice.tensors.at(n).shape == t.shape);
      CHECK(twice.tensors.at(n).bytes == t.bytes);
    }
  }
}

TEST_CASE("a model BERT's format cannot express is refused, naming the feature") {
  TempDir d;
  import_hf_bert({hf_fixture("bert_tiny_qa"), d / "qa", "", ""});
  import_hf_bert({hf_fixture("bert_tiny_cls"), d / "cls", "", ""});
  // an imported run with one model key changed, its checkpoint rewritten for the changed model
  int changed = 0;
  auto export_error = [&](const std::string& base, const std::string& from, const std::string& to) {
    const std::string run = d / ("changed-" + std::to_string(changed++));
    fs::create_directories(run);
    std::string c = read_file(d / base + "/config.yaml");
    REQUIRE(c.find(from) != std::string::npos);
    c.replace(c.find(from), from.size(), to);
    write_file(run + "/config.yaml", c);
    for (const char* f : {"vocab.txt", "labels.txt"})
      if (fs::exists(d / base + "/" + f)) fs::copy_file(d / base + "/" + f, run + "/" + f);
    LoadedRun r = load_run(run, "", /*load_data=*/false);
    save_checkpoint(run + "/checkpoint-best.safetensors", *r.model, nullptr, TrainState{});
    try {
      export_hf_bert({run, "best", run + "/hf"});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string attn = "{heads: 4, head_dim: 8}";
  CHECK(export_error("qa", attn, attn) == "");
  CHECK(export_error("qa", "norm: post", "norm: pre").find("pre-LN") != std::string::npos);
  CHECK(export_error("qa", attn, "{heads: 4, head_dim: 8, talking_heads: true}").find("talking heads") !=
        std::string::npos);
  CHECK(export_error("qa", attn, "{heads: 4, head_dim: 8, cross_layer: residual_logits}").find("cross-layer") !=
        std::string::npos);
  CHECK(export_error("qa", attn, "{heads: 4, head_dim: 8, gates: {type: l0}}").find("L0 gates") != std::string::npos);
  CHECK(export_error("qa", attn, "{heads: 2, head_dim: 8}").find("hidden / heads") != std::string::npos);
  CHECK(export_error("qa", attn, "{heads: 4, head_dim: 6}").find("hidden / heads") != std::string::npos);
  CHECK(export_error("cls", "pooling: cls_pooler", "pooling: cls").find("pooler") != std::string::npos);
}

TEST_CASE("headroom prune of an imported model, twice, then export-hf: pruned_heads by original indices") {
  TempDir d;
  REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_cls")) + " --out " + quote(d / "run")).code == 0);
  std::string rows;
  const std::pair<const char*, const char*> texts[] = {
      {"hello there", "greeting"}, {"what is the weather in paris", "weather"}, {"play the alarm at 5", "alarm"},
      {"hi", "greeting"}, {"is it cold in london", "weather"}, {"set an alarm", "alarm"}};
  for (const auto& [text, label] : texts) rows += nlohmann::json{{"text", text}, {"label", label}}.dump() + "\n";
  write_file(d / "test.jsonl", rows);
  // the imported run has no data files: name a test split for head importance
  std::string config = read_file(d / "run/config.yaml");
  config.replace(config.find("format: jsonl"), 13, "format: jsonl\n  test_path: " + (d / "test.jsonl"));
  write_file(d / "run/config.yaml", config);

  // fine-tuning from the imported checkpoint keeps its label ids (the classifier's rows), which are not sorted
  Result r = headroom("train --quiet " + quote(d / "run/config.yaml") + " --out " + quote(d / "ft") +
                      " --set data.train_path=" + quote(d / "test.jsonl") + " --set train.init_from=" +
                      quote(d / "run/checkpoint-best.safetensors") + " --set train.max_steps=2");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(read_file(d / "ft/labels.txt") == "greeting\nweather\nalarm\n");

  auto pruned_heads = [&](const std::string& run, const std::string& out) {
    const Result r = headroom("export-hf --run " + quote(run) + " --out " + quote(out));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    return nlohmann::json::parse(read_file(out + "/config.json"))["pruned_heads"];
  };
  r = headroom("prune --run " + quote(d / "run") + " --by importance --split test --keep 5 --out " +
                      quote(d / "p1"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const nlohmann::json first = pruned_heads(d / "p1", d / "hf1");
  r = headroom("prune --run " + quote(d / "p1") + " --by importance --split test --keep 2 --out " + quote(d / "p2"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const nlohmann::json second = pruned_heads(d / "p2", d / "hf2");
  auto removed = [](const nlohmann::json& p) {
    std::map<std::string, std::set<int64_t>> m;
    for (const auto& [layer, heads] : p.items())
      for (const auto& h : heads) m[layer].insert(h.get<int64_t>());
    return m;
  };
  auto count = [](const std::map<std::string, std::set<int64_t>>& m) {
    size_t n = 0;
    for (const auto& [l, s] : m) n += s.size();
    return n;
  };
  const auto a = removed(first), b = removed(second);
  CHECK(count(a) == 8 - 5);
  CHECK(count(b) == 8 - 2);
  for (const auto& [layer, heads] : a)  // the second prune removes more of the original heads, never renumbers
    for (int64_t h : heads) CHECK(b.at(layer).count(h) == 1);
  // the exported model is what headroom computes: import it and compare the checkpoints
  REQUIRE(headroom("import-hf " + quote(d / "hf2") + " --out " + quote(d / "back")).code == 0);
  const SafeTensorsFile x = read_safetensors(d / "p2/checkpoint-best.safetensors"),
                        y = read_safetensors(d / "back/checkpoint-best.safetensors");
  for (const auto& [n, t] : x.tensors) CHECK_MESSAGE(t.bytes == y.tensors.at(n).bytes, n);
}

TEST_CASE("a classifier without labels (bert-base-uncased) imports encoder and pooler; init_from labels it by the data") {
  TempDir d;
  // bert_tiny_cls as bert-base-uncased is: no id2label, no classifier, architectures BertForMaskedLM
  const std::string bare = edited_copy(d, "bert_tiny_cls", [](SafeTensorsFile& f) {
    f.tensors.erase("classifier.weight");
    f.tensors.erase("classifier.bias");
  });
  nlohmann::json config = nlohmann::json::parse(read_file(bare + "/config.json"));
  config.erase("id2label");
  config.erase("label2id");
  config["architectures"] = {"BertForMaskedLM"};
  write_file(bare + "/config.json", config.dump(2));

  const std::string run = d / "run";
  Result r = headroom("import-hf " + quote(bare) + " --task classification --out " + quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(occurrences(r.output, "leaves out classifier.weight, classifier.bias") == 1);  // said once
  CHECK_FALSE(fs::exists(run + "/labels.txt"));  // the training data's labels will be
  const SafeTensorsFile hf = read_safetensors(bare + "/model.safetensors"),
                        ours = read_safetensors(run + "/checkpoint-last.safetensors");
  CHECK(ours.tensors.count("classifier.weight") == 0);
  CHECK(ours.tensors.at("classifier.pooler.weight").bytes == hf.tensors.at("bert.pooler.dense.weight").bytes);
  CHECK(ours.tensors.at("classifier.pooler.bias").bytes == hf.tensors.at("bert.pooler.dense.bias").bytes);

  // fine-tuning: the pooler loads, the classifier starts fresh with the data's (sorted) labels
  write_label_rows(d / "rows.jsonl");
  const std::string fine_tune = "train --quiet " + quote(run + "/config.yaml") + " --set data.train_path=" +
                                quote(d / "rows.jsonl") + " --set train.max_steps=2 --set train.batch_size=3";
  r = headroom(fine_tune + " --out " + quote(d / "ft") + " --set train.init_from=" +
               quote(run + "/checkpoint-last.safetensors"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("(kept their initialisation): classifier.weight, classifier.bias") != std::string::npos);
  CHECK(read_file(d / "ft/labels.txt") == "alarm\ngreeting\nweather\n");

  // a classifier of another label count, with no labels.txt beside it to say which: both counts named
  fs::create_directories(d / "two");
  write_file(d / "two/rows.jsonl", "{\"text\": \"hi\", \"label\": \"greeting\"}\n"
                                   "{\"text\": \"is it cold in london\", \"label\": \"weather\"}\n");
  fs::copy_file(d / "ft/checkpoint-last.safetensors", d / "two/three-labels.safetensors");
  r = headroom(fine_tune + " --out " + quote(d / "ft2") + " --set data.train_path=" + quote(d / "two/rows.jsonl") +
               " --set train.init_from=" + quote(d / "two/three-labels.safetensors"));
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("three-labels.safetensors: its task head has 3 labels") != std::string::npos, r.output);
  CHECK(r.output.find("this run's data 2") != std::string::npos);

  // without id2label, a trained classifier keeps transformers' default label names
  const std::string unnamed = d / "unnamed";
  copy_dir(hf_fixture("bert_tiny_cls"), unnamed);
  write_file(unnamed + "/config.json", config.dump(2));
  REQUIRE(import_error(unnamed, d / "run-unnamed", "classification").empty());
  CHECK(read_file(d / "run-unnamed/labels.txt") == "LABEL_0\nLABEL_1\nLABEL_2\n");
}

TEST_CASE("train.init_from: a tensor the model has no place for is an error naming it; another task's head is skipped") {
  TempDir d;
  REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_qa")) + " --out " + quote(d / "qa")).code == 0);
  REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_cls")) + " --out " + quote(d / "cls")).code == 0);
  write_label_rows(d / "rows.jsonl");
  auto fine_tune = [&](const std::string& init_from, const std::string& out) {
    return headroom("train --quiet " + quote(d / "cls/config.yaml") + " --out " + quote(d / out) +
                    " --set data.train_path=" + quote(d / "rows.jsonl") + " --set train.max_steps=1" +
                    " --set train.init_from=" + quote(init_from));
  };
  // a span QA model fine-tuned into a classifier: its span head is not this model's, skipped and said once
  const std::string qa = d / "qa/checkpoint-last.safetensors";
  Result r = fine_tune(qa, "from-qa");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(occurrences(r.output, "encoder_classifier head does not use (skipped): span.bias, span.weight") == 1);

  // an encoder tensor the model lacks is an error naming it and the file
  SafeTensorsFile f = read_safetensors(qa);
  f.tensors["layers.1.attn.extra"] = f.tensors.at("layers.1.attn.q.bias");
  const std::string extra = d / "extra.safetensors";
  write_safetensors(extra, f);
  r = fine_tune(extra, "from-extra");
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find(extra + ": tensor 'layers.1.attn.extra' has no place in this model") != std::string::npos,
                r.output);
}

namespace {

// A copy of a fixture with one JSON file of it (config.json, tokenizer_config.json) edited.
std::string json_edited_copy(const TempDir& d, const std::string& fixture, const std::string& tag,
                             const std::string& file, const std::function<void(nlohmann::json&)>& edit) {
  const std::string dir = d / ("json-" + tag);
  copy_dir(hf_fixture(fixture), dir);
  nlohmann::json j = nlohmann::json::parse(read_file(dir + "/" + file));
  edit(j);
  write_file(dir + "/" + file, j.dump(2));
  return dir;
}

// bert_tiny_cls as sentence-transformers ships a BertModel: no classifier, no id2label, architectures [BertModel].
std::string bert_model_copy(const TempDir& d, const std::string& tag) {
  const std::string dir = edited_copy(d, "bert_tiny_cls", [](SafeTensorsFile& f) {
    f.tensors.erase("classifier.weight");
    f.tensors.erase("classifier.bias");
  });
  const std::string out = d / ("bert-model-" + tag);
  fs::rename(dir, out);
  nlohmann::json config = nlohmann::json::parse(read_file(out + "/config.json"));
  config.erase("id2label");
  config.erase("label2id");
  config["architectures"] = {"BertModel"};
  write_file(out + "/config.json", config.dump(2));
  return out;
}

bool has_note(const std::vector<std::string>& notes, const std::string& what) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

}  // namespace

TEST_CASE("import-hf refuses a directory that is not a BERT it can express, naming the file and the key (exit 2)") {
  TempDir d;
  struct Case {
    std::string tag, file;
    std::function<void(nlohmann::json&)> edit;
    std::string key;
  };
  const std::vector<Case> cases = {
      {"model-type", "config.json", [](nlohmann::json& j) { j["model_type"] = "roberta"; }, "'model_type'"},
      {"vocab-size", "config.json", [](nlohmann::json& j) { j["vocab_size"] = 84; }, "'vocab_size' is 84"},
      {"chinese", "tokenizer_config.json", [](nlohmann::json& j) { j["tokenize_chinese_chars"] = false; },
       "'tokenize_chinese_chars'"},
      {"basic", "tokenizer_config.json", [](nlohmann::json& j) { j["do_basic_tokenize"] = false; },
       "'do_basic_tokenize'"},
      {"never-split", "tokenizer_config.json", [](nlohmann::json& j) { j["never_split"] = {"paris"}; },
       "'never_split'"},
      {"class", "tokenizer_config.json", [](nlohmann::json& j) { j["tokenizer_class"] = "XLMRobertaTokenizer"; },
       "'tokenizer_class'"},
      {"lower-type", "tokenizer_config.json", [](nlohmann::json& j) { j["do_lower_case"] = "yes"; },
       "'do_lower_case'"},
      {"max-length", "tokenizer_config.json", [](nlohmann::json& j) { j["model_max_length"] = 0; },
       "'model_max_length'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.tag);
    const std::string dir = json_edited_copy(d, "bert_tiny_cls", c.tag, c.file, c.edit);
    const std::string e = import_error(dir, d / ("run-" + c.tag));
    CHECK_MESSAGE(e.find(dir + "/" + c.file) != std::string::npos, e);
    CHECK_MESSAGE(e.find(c.key) != std::string::npos, e);
    const Result r = headroom("import-hf " + quote(dir) + " --out " + quote(d / ("cli-" + c.tag)));
    CHECK_MESSAGE(r.code == 2, r.output);
    CHECK_MESSAGE(r.output.find(c.key) != std::string::npos, r.output);
  }
  // a vocab.txt of another length than config.json's vocab_size, and one of the same length as config.json's
  // vocab_size but not the token embedding's rows
  const std::string longer = json_edited_copy(d, "bert_tiny_cls", "longer-vocab", "config.json", [](nlohmann::json&) {});
  write_file(longer + "/vocab.txt", read_file(longer + "/vocab.txt") + "extra\n");
  std::string e = import_error(longer, d / "run-longer");
  CHECK_MESSAGE(e.find(longer + "/config.json: 'vocab_size' is 83 but " + longer + "/vocab.txt has 84 tokens") !=
                    std::string::npos, e);
  const std::string rows = json_edited_copy(d, "bert_tiny_cls", "rows", "config.json",
                                            [](nlohmann::json& j) { j["vocab_size"] = 84; });
  write_file(rows + "/vocab.txt", read_file(rows + "/vocab.txt") + "extra\n");
  e = import_error(rows, d / "run-rows");
  CHECK_MESSAGE(e.find(rows + "/model.safetensors: 'bert.embeddings.word_embeddings.weight' has 83 rows") !=
                    std::string::npos, e);
  CHECK(e.find(rows + "/vocab.txt has 84 tokens") != std::string::npos);
  const Result r = headroom("import-hf " + quote(rows) + " --out " + quote(d / "cli-rows"));
  CHECK_MESSAGE(r.code == 2, r.output);
}

TEST_CASE("import-hf follows tokenizer_config.json: lower-casing, strip_accents, model_max_length") {
  TempDir d;
  const std::string dir = json_edited_copy(d, "bert_tiny_cls", "tok", "tokenizer_config.json", [](nlohmann::json& j) {
    j["do_lower_case"] = true;
    j["strip_accents"] = false;
    j["tokenize_chinese_chars"] = true;
    j["never_split"] = nullptr;
    j["model_max_length"] = 16;
  });
  import_hf_bert({dir, d / "run", "", ""});
  const std::string config = read_file(d / "run/config.yaml");
  for (const char* key : {"lower_case: true", "strip_accents: false", "max_seq_len: 16"})
    CHECK_MESSAGE(config.find(key) != std::string::npos, key);
  LoadedRun run = load_run(d / "run", "best", /*load_data=*/false);
  CHECK(run.tokenizer->basic().lower_case());
  CHECK_FALSE(run.tokenizer->basic().strip_accents());
  // the export says the same
  export_hf_bert({d / "run", "best", d / "hf"});
  const auto tok = nlohmann::json::parse(read_file(d / "hf/tokenizer_config.json"));
  CHECK(tok["strip_accents"] == false);
  CHECK(tok["model_max_length"] == 16);
  // transformers' "no limit" (int(1e30)) and the fixture's own 40 (= the positions) set no max_seq_len
  const std::string huge = json_edited_copy(d, "bert_tiny_cls", "huge", "tokenizer_config.json",
                                            [](nlohmann::json& j) { j["model_max_length"] = 1e30; });
  import_hf_bert({huge, d / "huge-run", "", ""});
  CHECK(read_file(d / "huge-run/config.yaml").find("max_seq_len") == std::string::npos);
}

TEST_CASE("a BertModel without a task head imports as a classifier (or span QA with --task), said once") {
  TempDir d;
  const std::string dir = bert_model_copy(d, "a");
  const auto notes = import_hf_bert({dir, d / "cls", "", ""});
  CHECK(has_note(notes, "'architectures' (BertModel) has no task head"));
  CHECK(read_file(d / "cls/config.yaml").find("pooling: cls_pooler") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "cls/labels.txt"));
  const auto qa = import_hf_bert({dir, d / "qa", "span_qa", ""});
  CHECK(has_note(qa, "has no span QA head: initialised (qa_outputs.weight, qa_outputs.bias)"));
  CHECK(has_note(qa, "tensors not used by this model (bert.pooler.dense.bias, ...)"));
  // no architectures at all
  nlohmann::json config = nlohmann::json::parse(read_file(dir + "/config.json"));
  config.erase("architectures");
  write_file(dir + "/config.json", config.dump(2));
  CHECK(has_note(import_hf_bert({dir, d / "none", "", ""}), "'architectures' (none) has no task head"));
}

TEST_CASE("a sentence-transformers directory: its mean pooling is the classifier's, --pooling overrides it") {
  TempDir d;
  const std::string dir = bert_model_copy(d, "st");
  write_file(dir + "/modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  fs::create_directories(dir + "/1_Pooling");
  write_file(dir + "/1_Pooling/config.json", R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": false,
 "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false})");
  write_file(dir + "/sentence_bert_config.json", R"({"max_seq_length": 24, "do_lower_case": false})");
  const auto notes = import_hf_bert({dir, d / "mean", "", ""});
  CHECK(has_note(notes, dir + "/1_Pooling/config.json: sentence-transformers pools by mean_tokens: the classifier "
                              "uses pooling: mean"));
  CHECK(has_note(notes, "bert.pooler.dense"));  // BERT's pooler is not used
  CHECK(has_note(notes, "truncates texts to 24 tokens"));
  CHECK(read_file(d / "mean/config.yaml").find("pooling: mean") != std::string::npos);
  CHECK(read_safetensors(d / "mean/checkpoint-best.safetensors").tensors.count("classifier.pooler.weight") == 0);

  const Result r = headroom("import-hf " + quote(dir) + " --pooling cls_pooler --out " + quote(d / "pooler"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("the classifier uses pooling: cls_pooler") != std::string::npos);
  CHECK(read_file(d / "pooler/config.yaml").find("pooling: cls_pooler") != std::string::npos);
  CHECK(headroom("import-hf " + quote(dir) + " --task span_qa --pooling mean --out " + quote(d / "qa")).code == 2);

  // CLS pooling (bge's) is pooling: cls; a mode headroom has none for is said, and BERT's pooler stays
  write_file(dir + "/1_Pooling/config.json", R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false})");
  import_hf_bert({dir, d / "cls", "", ""});
  CHECK(read_file(d / "cls/config.yaml").find("pooling: cls\n") != std::string::npos);
  write_file(dir + "/1_Pooling/config.json", R"({"pooling_mode_max_tokens": true})");
  CHECK(has_note(import_hf_bert({dir, d / "max", "", ""}), "pools by max_tokens, which headroom's classifier has no "
                                                           "pooling for: the classifier uses pooling: cls_pooler"));
}

TEST_CASE("headroom tokenize and embed: the run's ids, hidden states of padded batches, pooled embeddings") {
  TempDir d;
  // an imported BertModel (its run has no classifier yet) and a fine-tuned classifier both embed
  const std::string dir = bert_model_copy(d, "embed");
  REQUIRE(headroom("import-hf " + quote(dir) + " --out " + quote(d / "run")).code == 0);
  const std::vector<std::string> texts = {"where was the king born?", "Paris", "the oldest river of England is known"};
  std::string lines;
  for (const auto& t : texts) lines += t + "\n";
  write_file(d / "texts.txt", lines);

  Result r = shell(quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom") + " tokenize --special --run " +
                   quote(d / "run") + " < " + quote(d / "texts.txt"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto first = nlohmann::json::parse(r.output.substr(0, r.output.find('\n')));
  CHECK(first["tokens"] == nlohmann::json{"[CLS]", "where", "was", "the", "king", "born", "?", "[SEP]"});

  const std::string hr = quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom");
  for (const char* pooling : {"none", "mean", "cls"}) {
    r = shell(hr + " embed --run " + quote(d / "run") + " --batch-size 2 --pooling " + pooling + " --out " +
              quote(d / (std::string(pooling) + ".safetensors")) + " < " + quote(d / "texts.txt"));
    REQUIRE_MESSAGE(r.code == 0, r.output);
  }
  // --jsonl: each line's "text", blank lines skipped; a line without one stops the command naming it
  write_file(d / "texts.jsonl", "{\"text\": \"Paris\", \"id\": 1}\n\n{\"text\": \"where was the king born?\"}\n");
  r = shell(hr + " embed --run " + quote(d / "run") + " --jsonl --pooling cls --out " + quote(d / "j.safetensors") +
            " < " + quote(d / "texts.jsonl"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(read_safetensors(d / "j.safetensors").tensors.at("embeddings").shape == std::vector<int64_t>{2, 32});
  write_file(d / "bad.jsonl", "{\"text\": \"Paris\"}\n\n{\"txt\": \"Paris\"}\n");
  for (const std::string& command : {std::string("tokenize"), "embed --out " + quote(d / "bad.safetensors")}) {
    r = shell(hr + " " + command + " --run " + quote(d / "run") + " --jsonl < " + quote(d / "bad.jsonl"));
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find("stdin line 3: expected a JSON object with a string \"text\"") != std::string::npos,
                  r.output);
  }
  CHECK_FALSE(fs::exists(d / "bad.safetensors"));
  // each text alone, in process
  import_hf_bert({hf_fixture("bert_tiny_cls"), d / "cls", "", ""});  // the same encoder, with its classifier
  LoadedRun run = load_run(d / "cls", "best", /*load_data=*/false);
  run.model->eval();
  NoGradGuard ng;
  const SafeTensorsFile none = read_safetensors(d / "none.safetensors"), mean = read_safetensors(d / "mean.safetensors"),
                        cls = read_safetensors(d / "cls.safetensors");
  const auto& h = none.tensors.at("last_hidden_state");
  REQUIRE(h.shape == std::vector<int64_t>{3, 9, 32});  // the longest text: 7 pieces + [CLS] [SEP]
  const std::vector<float> hidden = to_f32(h), means = to_f32(mean.tensors.at("embeddings")),
                           clss = to_f32(cls.tensors.at("embeddings"));
  const std::vector<int64_t> ids = to_i64(none.tensors.at("input_ids")), mask = to_i64(none.tensors.at("attention_mask"));
  for (size_t i = 0; i < texts.size(); ++i) {
    CAPTURE(i);
    std::vector<int32_t> row = run.tokenizer->encode(texts[i]).ids;
    row.insert(row.begin(), run.tokenizer->vocab().cls_id());
    row.push_back(run.tokenizer->vocab().sep_id());
    const int64_t len = static_cast<int64_t>(row.size());
    for (int64_t t = 0; t < 9; ++t) {
      CHECK(mask[i * 9 + static_cast<size_t>(t)] == (t < len ? 1 : 0));
      CHECK(ids[i * 9 + static_cast<size_t>(t)] == (t < len ? row[static_cast<size_t>(t)] : 0));
    }
    const std::vector<float> alone = run.model->hidden_states(make_encoder_input({row}, 0, Device::CPU)).to_vector();
    const std::vector<float> got(hidden.begin() + static_cast<int64_t>(i) * 9 * 32,
                                 hidden.begin() + static_cast<int64_t>(i) * 9 * 32 + len * 32);
    CHECK(max_abs_diff(got, alone) <= 1e-5f);
    std::vector<float> m(32, 0.f);
    for (int64_t t = 0; t < len; ++t)
      for (size_t k = 0; k < 32; ++k) m[k] += alone[static_cast<size_t>(t) * 32 + k] / static_cast<float>(len);
    CHECK(max_abs_diff(std::vector<float>(means.begin() + static_cast<int64_t>(i) * 32,
                                          means.begin() + static_cast<int64_t>(i + 1) * 32), m) <= 1e-5f);
    CHECK(max_abs_diff(std::vector<float>(clss.begin() + static_cast<int64_t>(i) * 32,
                                          clss.begin() + static_cast<int64_t>(i + 1) * 32),
                       std::vector<float>(alone.begin(), alone.begin() + 32)) <= 1e-5f);
  }
  r = shell(hr + " embed --run " + quote(d / "run") + " --pooling mean --normalize --out " + quote(d / "n.safetensors") +
            " < " + quote(d / "texts.txt"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::vector<float> unit = to_f32(read_safetensors(d / "n.safetensors").tensors.at("embeddings"));
  double norm = 0;
  for (size_t k = 0; k < 32; ++k) norm += static_cast<double>(unit[k]) * unit[k];
  CHECK(std::fabs(norm - 1.0) < 1e-5);
}

TEST_CASE("BertForMaskedLM: a stored decoder must be the tied one (error naming it and the file), NSP is not used") {
  TempDir d;
  import_hf_bert({hf_fixture("bert_tiny_mlm"), d / "plain", "", ""});
  CHECK(read_file(d / "plain/config.yaml").find("type: encoder_mlm") != std::string::npos);
  CHECK(read_file(d / "plain/config.yaml").find("task: mlm") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "plain/labels.txt"));
  const SafeTensorsFile plain = read_safetensors(d / "plain/checkpoint-best.safetensors");
  CHECK(plain.tensors.count("mlm.ln.weight") == 1);
  CHECK(plain.tensors.count("mlm.bias") == 1);
  auto same_as_plain = [&](const std::string& run) {
    const SafeTensorsFile f = read_safetensors(run + "/checkpoint-best.safetensors");
    REQUIRE(f.tensors.size() == plain.tensors.size());
    for (const auto& [n, t] : plain.tensors) CHECK_MESSAGE(t.bytes == f.tensors.at(n).bytes, n);
  };

  // older checkpoints store the decoder: equal to the word embeddings and to cls.predictions.bias, it loads
  const std::string equal = edited_copy(d, "bert_tiny_mlm", [](SafeTensorsFile& f) {
    f.tensors["cls.predictions.decoder.weight"] = f.tensors.at("bert.embeddings.word_embeddings.weight");
    f.tensors["cls.predictions.decoder.bias"] = f.tensors.at("cls.predictions.bias");
  });
  REQUIRE(import_error(equal, d / "equal").empty());
  same_as_plain(d / "equal");

  // a decoder weight that is not the word embeddings: an error naming it and the file, exit 2 through the binary
  const std::string other = edited_copy(d, "bert_tiny_mlm", [](SafeTensorsFile& f) {
    SafeTensor w = f.tensors.at("bert.embeddings.word_embeddings.weight");
    std::vector<float> v = to_f32(w);
    v[5] += 0.25f;
    f.tensors["cls.predictions.decoder.weight"] = from_f32(w.shape, v.data());
  });
  std::string e = import_error(other, d / "other");
  CHECK_MESSAGE(e.find(other + "/model.safetensors: 'cls.predictions.decoder.weight' differs from "
                               "'bert.embeddings.word_embeddings.weight'") != std::string::npos, e);
  Result r = headroom("import-hf " + quote(other) + " --out " + quote(d / "cli-other"));
  CHECK_MESSAGE(r.code == 2, r.output);
  CHECK(r.output.find(other + "/model.safetensors") != std::string::npos);
  CHECK(r.output.find("'cls.predictions.decoder.weight'") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "cli-other/config.yaml"));

  // the decoder bias: another value than cls.predictions.bias is refused; alone, it is the output bias
  const std::string bias = edited_copy(d, "bert_tiny_mlm", [](SafeTensorsFile& f) {
    SafeTensor b = f.tensors.at("cls.predictions.bias");
    std::vector<float> v = to_f32(b);
    v[0] += 1.f;
    f.tensors["cls.predictions.decoder.bias"] = from_f32(b.shape, v.data());
  });
  e = import_error(bias, d / "bias");
  CHECK_MESSAGE(e.find(bias + "/model.safetensors: 'cls.predictions.decoder.bias' differs from "
                              "'cls.predictions.bias'") != std::string::npos, e);
  const std::string alone = edited_copy(d, "bert_tiny_mlm", [](SafeTensorsFile& f) {
    f.tensors["cls.predictions.decoder.bias"] = f.tensors.at("cls.predictions.bias");
    f.tensors.erase("cls.predictions.bias");
  });
  REQUIRE(import_error(alone, d / "alone").empty());
  same_as_plain(d / "alone");

  // BertForPreTraining: the same MLM head, a pooler and the next-sentence head, which are not used (said)
  const std::string pre = edited_copy(d, "bert_tiny_mlm", [](SafeTensorsFile& f) {
    std::vector<float> nsp_w(2 * 32, 0.01f), nsp_b(2, 0.f), pool_w(32 * 32, 0.02f), pool_b(32, 0.f);
    f.tensors["cls.seq_relationship.weight"] = from_f32({2, 32}, nsp_w.data());
    f.tensors["cls.seq_relationship.bias"] = from_f32({2}, nsp_b.data());
    f.tensors["bert.pooler.dense.weight"] = from_f32({32, 32}, pool_w.data());
    f.tensors["bert.pooler.dense.bias"] = from_f32({32}, pool_b.data());
  });
  nlohmann::json config = nlohmann::json::parse(read_file(pre + "/config.json"));
  config["architectures"] = {"BertForPreTraining"};
  write_file(pre + "/config.json", config.dump(2));
  const auto notes = import_hf_bert({pre, d / "pre", "", ""});
  CHECK(has_note(notes, "the next-sentence head of BertForPreTraining (cls.seq_relationship.bias, ...) is not used"));
  CHECK(has_note(notes, "tensors not used by this model (bert.pooler.dense.bias, ...)"));
  same_as_plain(d / "pre");

  // a classification or span QA import of an MLM checkpoint: cls.* is not used, the task head starts fresh
  CHECK(has_note(import_hf_bert({hf_fixture("bert_tiny_mlm"), d / "cls", "classification", ""}),
                 "(cls.predictions.bias, ...)"));
  CHECK(read_file(d / "cls/config.yaml").find("type: encoder_classifier") != std::string::npos);
  CHECK(has_note(import_hf_bert({hf_fixture("bert_tiny_mlm"), d / "qa", "span_qa", ""}),
                 "has no span QA head: initialised (qa_outputs.weight, qa_outputs.bias)"));
  // --task mlm of a BertModel: the MLM head starts fresh, said once
  const std::string bare = bert_model_copy(d, "mlm");
  const auto bare_notes = import_hf_bert({bare, d / "bare", "mlm", ""});
  CHECK(has_note(bare_notes, "has no masked-LM head: initialised ("));
  CHECK(has_note(bare_notes, "cls.predictions.transform.LayerNorm.weight"));
  // another task's head is no part of an MLM model
  CHECK(import_error(hf_fixture("bert_tiny_cls"), d / "cls-as-mlm", "mlm").find("'classifier.bias'") !=
        std::string::npos);
}

TEST_CASE("headroom import-hf of a BertForMaskedLM, then predict (fill-mask) and a fine-tune on text") {
  TempDir d;
  const std::string run = d / "run";
  Result r = headroom("import-hf " + quote(hf_fixture("bert_tiny_mlm")) + " --out " + quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  auto fill_mask = [&](const std::string& run_dir, const std::string& which) {
    const Result p = headroom("predict --run " + quote(run_dir) + " --checkpoint " + which + " --top 3 --text " +
                              quote("the king was born in [MASK] , the largest city of france ."));
    REQUIRE_MESSAGE(p.code == 0, p.output);
    const auto j = nlohmann::json::parse(p.output.substr(p.output.find('{')));
    REQUIRE(j["masks"].size() == 1);
    const auto& m = j["masks"][0];
    REQUIRE(m.size() == 3);
    CHECK(m[0]["probability"].get<double>() >= m[1]["probability"].get<double>());
    CHECK(m[0]["sequence"].get<std::string>().find("the king was born in ") == 0);
    return m[0]["token"].get<std::string>();
  };
  // the imported model's answer is the argmax of its logits at the [MASK]
  const std::string top = fill_mask(run, "best");
  {
    LoadedRun loaded = load_run(run, "best", /*load_data=*/false);
    const Tokenizer& tok = *loaded.tokenizer;
    std::vector<int32_t> ids = {tok.vocab().cls_id()};
    for (const char* w : {"the", "king", "was", "born", "in", "[MASK]", ",", "the", "largest", "city", "of", "france",
                          "."})
      ids.push_back(tok.vocab().id(w));
    ids.push_back(tok.vocab().sep_id());
    loaded.model->eval();
    NoGradGuard ng;
    const std::vector<float> logits = loaded.model->forward(make_encoder_input({ids}, 0, Device::CPU)).to_vector();
    const int64_t V = tok.vocab().size();
    const auto row = logits.begin() + 6 * V;  // the [MASK]
    CHECK(tok.vocab().token(static_cast<int32_t>(std::max_element(row, row + V) - row)) == top);
  }

  // continued pretraining from the imported weights: every parameter loads, the loss is logged
  r = headroom("train --quiet " + quote(run + "/config.yaml") + " --out " + quote(d / "ft") +
               " --set data.train_path=" + quote(repo_path("tests/fixtures/wiki_en_tiny/head.txt")) +
               " --set data.cache_dir=" + quote(d / "cache") + " --set train.init_from=" +
               quote(run + "/checkpoint-best.safetensors") +
               " --set train.max_steps=3 --set train.batch_size=4 --set train.log_every=1");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK_MESSAGE(r.output.find("kept their initialisation") == std::string::npos, r.output);
  CHECK(losses(d / "ft").size() == 3);
  CHECK_FALSE(fill_mask(d / "ft", "last").empty());  // no eval corpus: no best checkpoint
  // and the fine-tuned run exports as a BertForMaskedLM again
  r = headroom("export-hf --run " + quote(d / "ft") + " --checkpoint last --out " + quote(d / "ft-hf"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(nlohmann::json::parse(read_file(d / "ft-hf/config.json"))["architectures"][0] == "BertForMaskedLM");
}
