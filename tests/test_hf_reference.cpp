// headroom against the real implementations, through scripts/hf-parity.py: transformers' BertModel on real pretrained
// BERTs (last_hidden_state to 1e-4 on 200 real texts), tokenizers' BertWordPieceTokenizer (identical ids on 10,000
// real texts), and transformers loading headroom's exports of fine-tuned and pruned tiny models (logits, and the
// classifier's probabilities from `headroom predict`, to 1e-4) and of masked-LM runs (BertForMaskedLM's logits at
// every position, to 1e-4).
//
// The python references are big (scripts/install-python-refs.sh: torch, transformers, tokenizers, safetensors) and the
// models are downloads (scripts/get-pretrained.sh), so neither is part of CI. Without them the cases that need them
// are filtered out (doctest counts them as skipped) and the executable exits 77, which meson reports as SKIP, as the
// GPU tests do without a device (tests/gpu_test_main.cpp). The python is HEADROOM_PYTHON, else the environment of
// install-python-refs.sh (~/.cache/headroom/pyref/bin/python) when present, else python3; the models are
// HEADROOM_PRETRAINED/<name> (default ~/.cache/headroom/pretrained/<name>).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "framework/autograd.h"
#include "framework/safetensors.h"
#include "tests/mlm_run.h"
#include "tests/repo_files.h"
#include "tests/tiny_run.h"
#include "train/run/trainer.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/qa_task.h"
#include "train/tools/hf_bert.h"

using namespace hr;
using namespace hr::testing;

namespace {

const std::array<std::string, 2> kModels = {"all-minilm-l6-v2", "bge-small-en-v1.5"};

std::string home() {
  const char* h = std::getenv("HOME");
  return h ? h : "";
}

std::string python() {
  if (const char* p = std::getenv("HEADROOM_PYTHON"); p && *p) return p;
  const std::string venv = home() + "/.cache/headroom/pyref/bin/python";
  return fs::exists(venv) ? venv : "python3";
}

std::string pretrained_dir(const std::string& name) {
  const char* root = std::getenv("HEADROOM_PRETRAINED");
  return (root && *root ? std::string(root) : home() + "/.cache/headroom/pretrained") + "/" + name;
}

bool python_has_references() {
  const std::string cmd = quote(python()) + " -c 'import torch, transformers, tokenizers, safetensors' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Runs scripts/hf-parity.py with `args`; its output is shown with the result.
Result parity(const std::string& args) {
  return shell(quote(python()) + " " + quote(repo_path("scripts/hf-parity.py")) + " " + args);
}

std::string headroom_binary() { return std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom"; }

void check_model(const std::string& name) {
  TempDir d;
  const std::string dir = pretrained_dir(name);
  Result r = parity("model --model " + quote(dir) + " --headroom " + quote(headroom_binary()) + " --work " +
                    quote(d / "model"));
  CHECK_MESSAGE(r.code == 0, r.output);
  MESSAGE(r.output.substr(r.output.rfind("{\"check\"")));
  r = parity("tokens --model " + quote(dir) + " --headroom " + quote(headroom_binary()) + " --work " +
             quote(d / "model"));
  CHECK_MESSAGE(r.code == 0, r.output);
  MESSAGE(r.output);
}

// Padded rows, their segments and mask, and headroom's logits for them, as hf-parity.py export reads them (a masked-LM
// model's: prediction_logits (B, T, V), every position).
void write_inputs(const std::string& path, EncoderModel& model, const std::vector<std::vector<int32_t>>& rows,
                  const std::vector<std::vector<int32_t>>& segments, bool span,
                  const std::vector<float>& probabilities = {}) {
  model.eval();
  NoGradGuard ng;
  const EncoderInput in = make_encoder_input(rows, 0, Device::CPU, &segments);
  const int64_t B = in.ids.dim(0), T = in.ids.dim(1);
  std::vector<int64_t> ids(static_cast<size_t>(B * T), 0), seg(ids.size(), 0), mask(ids.size(), 0);
  for (int64_t b = 0; b < B; ++b)
    for (size_t t = 0; t < rows[static_cast<size_t>(b)].size(); ++t) {
      const size_t i = static_cast<size_t>(b * T) + t;
      ids[i] = rows[static_cast<size_t>(b)][t];
      seg[i] = segments[static_cast<size_t>(b)][t];
      mask[i] = 1;
    }
  const std::vector<float> out = model.forward(in).to_vector();
  SafeTensorsFile f;
  f.tensors["input_ids"] = from_i64({B, T}, ids.data());
  f.tensors["token_type_ids"] = from_i64({B, T}, seg.data());
  f.tensors["attention_mask"] = from_i64({B, T}, mask.data());
  if (model.type() == "encoder_mlm") {
    f.tensors["prediction_logits"] = from_f32({B, T, static_cast<int64_t>(out.size()) / (B * T)}, out.data());
  } else if (!span) {
    f.tensors["logits"] = from_f32({B, static_cast<int64_t>(out.size()) / B}, out.data());
    if (!probabilities.empty()) f.tensors["probabilities"] = from_f32({B, static_cast<int64_t>(out.size()) / B},
                                                                      probabilities.data());
  } else {  // (B, T, 2) -> start and end (B, T)
    std::vector<float> start, end;
    for (size_t i = 0; i < out.size(); i += 2) {
      start.push_back(out[i]);
      end.push_back(out[i + 1]);
    }
    f.tensors["start_logits"] = from_f32({B, T}, start.data());
    f.tensors["end_logits"] = from_f32({B, T}, end.data());
  }
  write_safetensors(path, f);
}

// Exports the run, writes headroom's logits for a few texts (classification) or question/context pairs (span QA),
// and has transformers load the export and compare.
void check_export(const std::string& run_dir, const std::string& which, const std::string& out, bool span) {
  Result r = headroom("export-hf --run " + quote(run_dir) + " --checkpoint " + which + " --out " + quote(out + "/hf"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  LoadedRun run = load_run(run_dir, which, /*load_data=*/false);
  const Tokenizer& tok = *run.tokenizer;
  std::vector<std::vector<int32_t>> rows, segments;
  std::vector<float> probabilities;  // headroom predict's, (B, labels) in label id order
  if (!span) {
    const std::vector<std::string> texts = {"what is the weather in paris", "hi",
                                            "set an alarm at 5 in london, the largest city"};
    const std::vector<std::string>& labels = dynamic_cast<const ClassificationTask&>(*run.task).labels().labels();
    std::string args;
    for (const auto& t : texts) args += " --text " + quote(t);
    r = headroom("predict --run " + quote(run_dir) + " --checkpoint " + which + " --top " +
                 std::to_string(labels.size()) + args);
    REQUIRE_MESSAGE(r.code == 0, r.output);
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] != '{') continue;  // notes
      std::map<std::string, float> p;
      const nlohmann::json answer = nlohmann::json::parse(line);
      for (const auto& top : answer.at("top")) p[top.at("label").get<std::string>()] = top.at("probability").get<float>();
      REQUIRE(p.size() == labels.size());
      for (const auto& l : labels) probabilities.push_back(p.at(l));
    }
    REQUIRE(probabilities.size() == texts.size() * labels.size());
    for (const auto& text : texts) {
      std::vector<int32_t> ids = tok.encode(text).ids;
      ids.insert(ids.begin(), tok.vocab().cls_id());
      ids.push_back(tok.vocab().sep_id());
      segments.emplace_back(ids.size(), 0);
      rows.push_back(std::move(ids));
    }
  } else {
    const std::pair<const char*, const char*> pairs[] = {
        {"where was the king born?", "the king was born in paris, the largest city of france."},
        {"what river?", "the oldest river of england"}};
    for (const auto& [q, c] : pairs) {
      const auto w = make_qa_windows(tok.vocab(), tok.encode(q).ids, tok.encode(c).ids,
                                     QaWindowing{run.model->max_len(), 20, 128}, {});
      REQUIRE(w.size() == 1);
      rows.push_back(w[0].ids);
      segments.push_back(w[0].segments);
    }
  }
  write_inputs(out + "/inputs.safetensors", *run.model, rows, segments, span, probabilities);
  r = parity("export --hf " + quote(out + "/hf") + " --inputs " + quote(out + "/inputs.safetensors"));
  CHECK_MESSAGE(r.code == 0, r.output);
  MESSAGE(r.output);
}

// Exports a masked-LM run and has transformers' BertForMaskedLM compare its logits at every position of texts with
// [MASK]s, one of them a pair with segment 1, padded.
void check_mlm_export(const std::string& run_dir, const std::string& which, const std::string& out) {
  Result r = headroom("export-hf --run " + quote(run_dir) + " --checkpoint " + which + " --out " + quote(out + "/hf"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const nlohmann::json config = nlohmann::json::parse(read_file(out + "/hf/config.json"));
  CHECK(config["architectures"][0] == "BertForMaskedLM");
  LoadedRun run = load_run(run_dir, which, /*load_data=*/false);
  const Tokenizer& tok = *run.tokenizer;
  REQUIRE(tok.vocab().mask_id());
  std::vector<std::vector<int32_t>> rows, segments;
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"the king was born in paris, the largest city of france.", ""},
      {"the oldest river of england", ""},
      {"where was the king born?", "the king was born in paris."}};
  for (const auto& [a, b] : texts) {
    std::vector<int32_t> ids = {tok.vocab().cls_id()}, seg = {0};
    for (int32_t id : tok.encode(a).ids) ids.push_back(id);
    ids.push_back(tok.vocab().sep_id());
    seg.resize(ids.size(), 0);
    if (!b.empty()) {
      for (int32_t id : tok.encode(b).ids) ids.push_back(id);
      ids.push_back(tok.vocab().sep_id());
      seg.resize(ids.size(), 1);
    }
    for (size_t t = 2; t + 1 < ids.size(); t += 3) ids[t] = *tok.vocab().mask_id();  // a [MASK] every third token
    rows.push_back(ids);
    segments.push_back(seg);
  }
  write_inputs(out + "/inputs.safetensors", *run.model, rows, segments, false);
  r = parity("export --hf " + quote(out + "/hf") + " --inputs " + quote(out + "/inputs.safetensors"));
  CHECK_MESSAGE(r.code == 0, r.output);
  MESSAGE(r.output);
}

// Fine-tunes the imported classifier d/run for 4 steps on six intent rows (its train and test split alike), into
// d/ft; `extra`: more train arguments.
void fine_tune_on_intents(const TempDir& d, const std::string& lr, const std::string& extra = "") {
  const std::pair<const char*, const char*> texts[] = {
      {"hello there", "greeting"}, {"what is the weather in paris", "weather"}, {"play the alarm at 5", "alarm"},
      {"hi", "greeting"}, {"is it cold in london", "weather"}, {"set an alarm", "alarm"}};
  std::string rows;
  for (const auto& [text, label] : texts) rows += nlohmann::json{{"text", text}, {"label", label}}.dump() + "\n";
  write_file(d / "rows.jsonl", rows);
  const Result r = headroom("train --quiet " + quote(d / "run/config.yaml") + " --out " + quote(d / "ft") +
                            " --set data.train_path=" + quote(d / "rows.jsonl") + " --set data.test_path=" +
                            quote(d / "rows.jsonl") + " --set train.init_from=" +
                            quote(d / "run/checkpoint-best.safetensors") +
                            " --set train.max_steps=4 --set train.batch_size=3 --set train.lr=" + lr +
                            " --set train.warmup=0" + extra);
  REQUIRE_MESSAGE(r.code == 0, r.output);
}

}  // namespace

TEST_SUITE("python_refs") {
  TEST_CASE("all-minilm-l6-v2: last_hidden_state and WordPiece ids against transformers and tokenizers") {
    check_model("all-minilm-l6-v2");
  }

  TEST_CASE("bge-small-en-v1.5: last_hidden_state and WordPiece ids against transformers and tokenizers") {
    check_model("bge-small-en-v1.5");
  }

  TEST_CASE("a fine-tuned imported classifier, exported, then pruned and exported: transformers' logits") {
    TempDir d;
    REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_cls")) + " --out " + quote(d / "run")).code == 0);
    fine_tune_on_intents(d, "1e-3");
    check_export(d / "ft", "last", d / "ft-export", false);  // no eval data: no best checkpoint
    const Result r = headroom("prune --run " + quote(d / "ft") +
                              " --checkpoint last --by importance --split test --keep 5 --out " + quote(d / "p"));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    check_export(d / "p", "best", d / "p-export", false);
    CHECK(nlohmann::json::parse(read_file(d / "p-export/hf/config.json")).contains("pruned_heads"));
  }

  // pruned_heads on a real model: 6 layers of 12 heads, half of them removed where importance puts them
  TEST_CASE("all-minilm-l6-v2: fine-tuned, half its heads pruned by importance, exported: transformers' logits") {
    TempDir d;
    Result r = headroom("import-hf " + quote(pretrained_dir("all-minilm-l6-v2")) + " --task classification --out " +
                        quote(d / "run"));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    // BERT's classifier: sentence-transformers' mean pooling does not export
    fine_tune_on_intents(d, "1e-4", " --set model.pooling=cls_pooler");
    r = headroom("prune --run " + quote(d / "ft") + " --checkpoint last --by importance --split test --keep 36 --out " +
                 quote(d / "p"));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    check_export(d / "p", "best", d / "p-export", false);
    const nlohmann::json pruned = nlohmann::json::parse(read_file(d / "p-export/hf/config.json")).at("pruned_heads");
    size_t removed = 0;
    for (const auto& [layer, heads] : pruned.items()) removed += heads.size();
    CHECK(removed == 36);
  }

  TEST_CASE("a fine-tuned imported span QA model, and a pruned one, exported: transformers' start and end logits") {
    TempDir d;
    REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_qa")) + " --out " + quote(d / "run")).code == 0);
    const std::vector<std::array<std::string, 3>> qa = {
        {"where was the king born?", "the king was born in paris, the largest city of france.", "paris"},
        {"where was the queen born?", "the queen was born in london, the largest city of england.", "london"},
        {"what is the largest city of france?", "paris is the largest city of france.", "paris"}};
    write_squad(d / "squad.json", qa);
    Result r = headroom("train --quiet " + quote(d / "run/config.yaml") + " --out " + quote(d / "ft") +
                        " --set data.train_path=" + quote(d / "squad.json") + " --set train.init_from=" +
                        quote(d / "run/checkpoint-best.safetensors") +
                        " --set train.max_steps=4 --set train.batch_size=3 --set train.lr=1e-3 --set train.warmup=0");
    REQUIRE_MESSAGE(r.code == 0, r.output);
    check_export(d / "ft", "last", d / "ft-export", true);
    // a checkpoint with pruned_heads, imported and exported again
    REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_qa_pruned")) + " --out " + quote(d / "pruned")).code ==
            0);
    check_export(d / "pruned", "best", d / "pruned-export", true);
  }

  TEST_CASE("masked-LM runs exported as BertForMaskedLM: transformers' prediction logits at every position") {
    TempDir d;
    // headroom's own tiny MLM run (tests/mlm_run.h: bert-base-uncased's vocabulary), trained a few steps
    const std::string cfg = mlm_setup(d);
    Result r = headroom("train --quiet " + quote(cfg) + " --out " + quote(d / "mlm") + " --set train.max_steps=4");
    REQUIRE_MESSAGE(r.code == 0, r.output);
    check_mlm_export(d / "mlm", "last", d / "mlm-export");
    // the imported BertForMaskedLM fixture, pretrained further on text
    REQUIRE(headroom("import-hf " + quote(hf_fixture("bert_tiny_mlm")) + " --out " + quote(d / "run")).code == 0);
    r = headroom("train --quiet " + quote(d / "run/config.yaml") + " --out " + quote(d / "ft") +
                 " --set data.train_path=" + quote(repo_path("tests/fixtures/wiki_en_tiny/head.txt")) +
                 " --set data.cache_dir=" + quote(d / "cache") + " --set train.init_from=" +
                 quote(d / "run/checkpoint-best.safetensors") +
                 " --set train.max_steps=4 --set train.batch_size=4 --set train.lr=1e-3 --set train.warmup=0");
    REQUIRE_MESSAGE(r.code == 0, r.output);
    check_mlm_export(d / "ft", "last", d / "ft-export");
  }
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  bool skipped = false;
  if (!python_has_references()) {
    std::printf("%s cannot import torch, transformers, tokenizers and safetensors (scripts/install-python-refs.sh "
                "installs them): the cases of test suite \"python_refs\" are skipped\n", python().c_str());
    context.addFilter("test-suite-exclude", "python_refs");
    skipped = true;
  } else {
    for (const std::string& name : kModels)
      if (!std::filesystem::exists(pretrained_dir(name) + "/config.json")) {
        std::printf("no %s (scripts/get-pretrained.sh %s): its case is skipped\n", pretrained_dir(name).c_str(),
                    name.c_str());
        context.addFilter("test-case-exclude", (name + ":*").c_str());
        skipped = true;
      }
  }
  const int status = context.run();
  if (context.shouldExit() || status != 0 || !skipped) return status;
  std::printf("python references or pretrained models missing: some cases were skipped (exit 77)\n");
  return 77;
}
