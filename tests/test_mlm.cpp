// Masked-language-model pretraining (data.task mlm) end to end on a Wikipedia extract: the sparse decoder equals the
// dense one and its gradients the finite differences, a tiny model learns masked tokens far above the unigram
// baseline, masks are dynamic in training and fixed in evaluation, a resume continues exactly, a fine-tuning run
// loads every encoder tensor, fill-mask prediction, and bad input exits 2 naming the key or file.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "framework/autograd.h"
#include "framework/config.h"
#include "framework/ops.h"
#include "framework/random.h"
#include "framework/safetensors.h"
#include "models/encoder_model.h"
#include "models/mlm_head.h"
#include "tests/gradcheck.h"
#include "tests/mlm_run.h"
#include "train/run/run_config.h"
#include "train/tasks/mlm_task.h"
#include "train/tokenizer/tokenizer.h"

using namespace hr;
using namespace hr::testing;

namespace {

std::unique_ptr<EncoderModel> tiny_mlm_model(int64_t vocab) {
  manual_seed(3);
  return build_model(Config::parse(R"(
type: encoder_mlm
d_model: 16
ffn_dim: 32
max_len: 8
norm: post
dropout: 0.0
layers:
  - repeat: 1
    attention: {heads: 2, head_dim: 8}
)", "mlm.yaml"), ModelDims{vocab, 0, 0});
}

EncoderInput ids_input(const std::vector<std::vector<int32_t>>& rows) { return make_encoder_input(rows, 0, Device::CPU); }

}  // namespace

TEST_CASE("mlm head: logits at masked rows equal the dense decoder's, and the tied decoder's gradient is right") {
  auto model = tiny_mlm_model(23);
  const EncoderInput in = ids_input({{1, 5, 7, 9, 2, 0}, {1, 4, 4, 8, 11, 2}});
  const auto& head = dynamic_cast<const MlmHead&>(model->head());
  NoGradGuard ng;
  const Tensor hidden = model->hidden_states(in);  // (2, 6, 16)
  const std::vector<float> dense = model->forward(in).to_vector();  // (2, 6, 23)
  const std::vector<int64_t> positions = {1, 3, 8, 10};
  const std::vector<float> sparse = head.logits_at(hidden, positions).to_vector();  // (4, 23)
  REQUIRE(sparse.size() == 4 * 23);
  for (size_t m = 0; m < positions.size(); ++m)
    for (size_t v = 0; v < 23; ++v)
      CHECK(sparse[m * 23 + v] == doctest::Approx(dense[static_cast<size_t>(positions[m]) * 23 + v]).epsilon(1e-6));
}

TEST_CASE("mlm head: gradients of the sparse loss by finite differences, the token table reached twice") {
  auto model = tiny_mlm_model(13);
  const EncoderInput in = ids_input({{1, 5, 7, 9, 2}, {1, 4, 4, 8, 2}});
  auto& head = dynamic_cast<MlmHead&>(model->head());
  Tensor table, query, ffn;
  for (const auto& [name, t] : model->named_parameters()) {
    if (name == "embeddings.token") table = t;
    if (name.find("attn.q.weight") != std::string::npos) query = t;
    if (name.find("ffn.in.weight") != std::string::npos) ffn = t;
  }
  REQUIRE(table.defined());
  REQUIRE(query.defined());
  REQUIRE(ffn.defined());
  const Tensor labels = Tensor::from_ids({3, 12, 0}, {3});
  const auto loss = [&](const std::vector<Tensor>&) {
    return cross_entropy(head.logits_at(model->hidden_states(in), {2, 6, 8}), labels);
  };
  // the table feeds both the input embeddings and the decoder; the head's own dense layer and bias
  for (const Tensor& t : {table, query, ffn, head.dense.weight, head.bias}) {
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& xs) { return loss(xs); }, {t}, 1e-2f, 48);
    INFO(r.worst);
    CHECK(r.max_error < 2e-2);
  }
}

namespace {

// The task of an mlm config, encoded (its token caches opened).
struct LoadedTask {
  RunConfig rc;
  std::unique_ptr<Task> task;
  std::unique_ptr<Tokenizer> tok;
};
LoadedTask load_task(const std::string& config, const std::vector<std::string>& sets = {}) {
  LoadedTask l;
  l.rc = load_run_config(config, sets);
  l.task = make_task(l.rc.root, TaskContext{l.rc.data, "", true, ""});
  l.tok = std::make_unique<Tokenizer>(Vocab::load(l.rc.tokenizer.vocab));
  l.task->encode(*l.tok, 32);
  return l;
}

std::vector<int32_t> labels_of(const Batch& b) { return b.labels.to_ids(); }

// What a model that ignores the context scores on the eval corpus: the top-1 accuracy of always guessing the training
// corpus's most frequent token (percent), and the perplexity of its unigram distribution (add-one smoothed).
struct Unigram {
  double accuracy = 0, perplexity = 0;
};
Unigram unigram_baseline(const MlmTask& task, int64_t vocab) {
  const TokenCache *train = task.cache("train"), *eval = task.cache("eval");
  REQUIRE(train != nullptr);
  REQUIRE(eval != nullptr);
  std::vector<double> count(static_cast<size_t>(vocab), 1.0);
  for (int64_t i = 0; i < train->size(); ++i) count[static_cast<size_t>(train->at(i))] += 1;
  const double total = static_cast<double>(train->size() + vocab);
  const auto top = static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin());
  double nll = 0;
  int64_t hits = 0;
  for (int64_t i = 0; i < eval->size(); ++i) {
    nll -= std::log(count[static_cast<size_t>(eval->at(i))] / total);
    hits += eval->at(i) == top;
  }
  const auto n = static_cast<double>(eval->size());
  return {100.0 * static_cast<double>(hits) / n, std::exp(nll / n)};
}

double final_eval(const std::string& run, const std::string& metric) {
  double v = -1;
  for (const auto& r : metrics_rows(run))
    if (r.contains("eval") && r["eval"].contains(metric)) v = r["eval"][metric].get<double>();
  return v;
}

}  // namespace

TEST_CASE("mlm: training rows are masked anew each epoch, the same way for the same seed; eval rows once for all") {
  TempDir d;
  const std::string cfg = mlm_setup(d);
  LoadedTask a = load_task(cfg), b = load_task(cfg, {"train.seed=7"});
  const std::vector<int64_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  a.task->start_epoch(0, 1);
  const auto e0 = labels_of(a.task->make_batch(rows, Device::CPU));
  a.task->start_epoch(1, 1);
  const auto e1 = labels_of(a.task->make_batch(rows, Device::CPU));
  b.task->start_epoch(0, 1);
  CHECK(labels_of(b.task->make_batch(rows, Device::CPU)) == e0);  // a pure function of (seed, epoch, row)
  CHECK(e1 != e0);                                                 // dynamic masking
  b.task->start_epoch(0, 2);
  CHECK(labels_of(b.task->make_batch(rows, Device::CPU)) != e0);  // the run's seed keys the draws
  // every row is [CLS] ... [SEP], exactly max_seq_len long, the specials never chosen
  const Batch batch = a.task->make_batch(rows, Device::CPU);
  const auto ids = batch.input.ids.to_ids();
  const auto labels = labels_of(batch);
  REQUIRE(batch.input.ids.dim(1) == 32);
  for (size_t r = 0; r < rows.size(); ++r) {
    CHECK(ids[r * 32] == a.tok->vocab().cls_id());
    CHECK(ids[r * 32 + 31] == a.tok->vocab().sep_id());
    CHECK(labels[r * 32] == -100);
    CHECK(labels[r * 32 + 31] == -100);
  }
  // the eval split: the same positions in every run, whatever the seed or epoch
  CHECK(labels_of(a.task->make_split_batch("eval", rows, Device::CPU)) ==
        labels_of(b.task->make_split_batch("eval", rows, Device::CPU)));
  CHECK(a.task->loss_weight(batch) ==
        static_cast<double>(std::count_if(labels.begin(), labels.end(), [](int32_t x) { return x != -100; })));
}

// A vocabulary learned from the corpus (2000 tokens): a tiny model behind BERT's 30522-token decoder sits on the
// unigram plateau for hundreds of steps before it uses the context, as small BERTs do early in pretraining. A model
// that ignores the context (masked positions gathered from the wrong rows, say) scores the unigram baseline at best.
TEST_CASE("mlm: a tiny model learns masked tokens of a Wikipedia extract far above the unigram baseline") {
  TempDir d;
  const std::string cfg = mlm_setup(d, "", "tiny.txt", 3, 2000);
  const Result r = headroom("train --quiet " + quote(cfg) + " --out " + quote(d / "run") +
                            " --set train.max_steps=600 --set train.batch_size=32 --set train.eval_every=600 "
                            "--set train.log_every=50 --set train.lr=3e-3 --set model.dropout=0 "
                            "--set model.d_model=64 --set model.ffn_dim=128 --set model.layers.0.attention.head_dim=32");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const LoadedTask l = load_task(cfg, {"tokenizer.vocab=" + (d / "run/vocab.txt")});
  const Unigram unigram = unigram_baseline(dynamic_cast<const MlmTask&>(*l.task), l.tok->vocab().size());
  const double accuracy = final_eval(d / "run", "masked_accuracy"), perplexity = final_eval(d / "run", "perplexity");
  MESSAGE("masked accuracy " << accuracy << "%, perplexity " << perplexity << "; the unigram baseline: "
                             << unigram.accuracy << "%, perplexity " << unigram.perplexity);
  CHECK(unigram.accuracy > 2.0);
  // measured 19.4% and 30.9 against 11.6% and 41.5: what the context adds after 600 steps of a 2-layer model
  CHECK(accuracy > 1.4 * unigram.accuracy);
  CHECK(perplexity < 0.85 * unigram.perplexity);
}

TEST_CASE("mlm: a run cut mid-epoch and resumed has the losses of the uninterrupted run") {
  TempDir d;
  // batch 32: about 12 steps an epoch, so 20 steps cross an epoch boundary after the cut at 10
  const std::string cfg = mlm_setup(d, "", "head.txt", 1) + " --set train.batch_size=32";
  const Result a = headroom("train --quiet " + cfg + " --out " + quote(d / "full"));
  REQUIRE_MESSAGE(a.code == 0, a.output);
  const Result b1 = headroom("train --quiet " + cfg + " --set train.max_steps=10 --out " + quote(d / "cut"));
  REQUIRE_MESSAGE(b1.code == 0, b1.output);
  const Result b2 = headroom("train --quiet --resume " + quote(d / "cut") + " --set train.max_steps=20");
  REQUIRE_MESSAGE(b2.code == 0, b2.output);
  const auto la = losses(d / "full"), lb = losses(d / "cut");
  REQUIRE(la.size() == 20);
  REQUIRE(lb.size() == 20);
  for (const auto& [step, loss] : la) {
    CAPTURE(step);
    CHECK(lb.at(step) == doctest::Approx(loss).epsilon(1e-6));
  }
  CHECK(final_eval(d / "cut", "masked_accuracy") == doctest::Approx(final_eval(d / "full", "masked_accuracy")));
}

TEST_CASE("mlm: fine-tuning from a pretraining run loads every encoder tensor and its vocabulary") {
  TempDir d;
  const std::string cfg = mlm_setup(d);
  REQUIRE(headroom("train --quiet " + quote(cfg) + " --out " + quote(d / "pre") + " --set train.max_steps=4").code == 0);
  write_jsonl(d / "cls.jsonl", tiny_rows(48, 0));
  // the pretraining model block as a classifier; no tokenizer.vocab: the run takes the one beside init_from
  std::string c = read_file(cfg);
  c.replace(c.find("encoder_mlm"), 11, "encoder_classifier\n  pooling: mean");
  c = c.substr(0, c.find("tokenizer:")) + "data:\n  task: classification\n  format: jsonl\n  train_path: " +
      (d / "cls.jsonl") + "\ntrain:\n  max_steps: 2\n  batch_size: 8\n  init_from: " +
      (d / "pre/checkpoint-last.safetensors") + "\n";
  write_file(d / "cls.yaml", c);
  const Result r = headroom("train " + quote(d / "cls.yaml") + " --out " + quote(d / "ft"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  // only the classifier starts afresh; the mlm head's tensors are the ones skipped
  CHECK(r.output.find("(kept their initialisation): classifier.weight, classifier.bias") != std::string::npos);
  CHECK(r.output.find("does not use (skipped): mlm.bias, mlm.dense.bias, mlm.dense.weight, mlm.ln") != std::string::npos);
  CHECK(read_file(d / "ft/vocab.txt") == read_file(d / "pre/vocab.txt"));
  const SafeTensorsFile pre = read_safetensors(d / "pre/checkpoint-last.safetensors");
  int64_t encoder = 0;
  for (const auto& [name, t] : pre.tensors) encoder += name.rfind("embeddings.", 0) == 0 || name.rfind("layers.", 0) == 0;
  CHECK(encoder >= 20);
  CHECK(r.output.find("parameters not in") != std::string::npos);

  // another vocabulary than the pretraining run's: a config error naming tokenizer.vocab, and no run directory
  const Result bad = headroom("train " + quote(d / "cls.yaml") + " --out " + quote(d / "ft2") +
                              " --set tokenizer.vocab=" + quote(data_file("bert_vocab/bert-base-chinese-vocab.txt")));
  CHECK(bad.code == 2);
  CHECK(bad.output.find("tokenizer.vocab") != std::string::npos);
  CHECK(bad.output.find("not the vocabulary of train.init_from") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "ft2"));
}

TEST_CASE("mlm: predict fills [MASK] with the top-k tokens, their probabilities and the filled sequence") {
  TempDir d;
  const std::string cfg = mlm_setup(d);
  REQUIRE(headroom("train --quiet " + quote(cfg) + " --out " + quote(d / "run") + " --set train.max_steps=5").code == 0);
  const Result r = headroom("predict --run " + quote(d / "run") + " --top 3 --text " +
                            quote("paris is the capital of [MASK] and [MASK] ."));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  REQUIRE(j["masks"].size() == 2);
  for (const auto& m : j["masks"]) {
    REQUIRE(m.size() == 3);
    CHECK(m[0]["probability"].get<double>() >= m[1]["probability"].get<double>());
    CHECK(m[1]["probability"].get<double>() >= m[2]["probability"].get<double>());
    CHECK(m[0]["sequence"].get<std::string>().find("paris is the capital of") == 0);
  }
  CHECK(headroom("predict --run " + quote(d / "run") + " --text " + quote("no mask here")).output.find(
            "no [MASK]") != std::string::npos);
}

TEST_CASE("curves: an MLM run's evaluation metric against tokens seen, and clear errors") {
  TempDir d;
  const std::string cfg = mlm_setup(d);
  REQUIRE(headroom("train --quiet " + quote(cfg) + " --out " + quote(d / "run") + " --set train.eval_every=5").code == 0);
  const Result r = headroom("curves " + quote(d / "run") + " --metric eval.masked_accuracy --x tokens --out " +
                            quote(d / "acc.png"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::string png = read_file(d / "acc.png");
  REQUIRE(png.size() > 1000);
  CHECK(png.substr(1, 3) == "PNG");
  CHECK(headroom("curves " + quote(d / "run") + " --metric eval.nothing --out " + quote(d / "x.png")).code == 2);
  CHECK(headroom("curves " + quote(d / "nowhere") + " --metric loss --out " + quote(d / "x.png")).code != 0);
}

TEST_CASE("mlm: bad corpora and options exit 2 naming the key or the file") {
  TempDir d;
  const std::string cfg = mlm_setup(d);
  const auto train = [&](const std::string& sets) { return headroom("train --quiet " + quote(cfg) + " --out " +
                                                                     quote(d / "never") + " " + sets); };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set data.mlm.probability=0", "data.mlm.probability"},
      {"--set data.mlm.probability=1.5", "data.mlm.probability"},
      {"--set data.mlm.mask=0.8 --set data.mlm.random=0.3", "data.mlm"},
      {"--set data.train_path=" + quote(d / "missing-*.txt"), "data.train_path"},
      {"--set data.format=csv", "data.format"},
      {"--set tokenizer.vocab=" + quote(d / "no-mask-vocab.txt"), "[MASK]"},
      {"--set data.mlm.whole_word=true --set tokenizer.vocab=" + quote(d / "no-pieces-vocab.txt"), "##"},
  };
  write_file(d / "no-mask-vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n##s\n");
  write_file(d / "no-pieces-vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n");
  for (const auto& [sets, needle] : cases) {
    CAPTURE(sets);
    const Result r = train(sets);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find(needle) != std::string::npos, r.output);
    CHECK_FALSE(fs::exists(d / "never"));
  }
  // a corpus that packs into no full row, an empty one: errors naming the split's key
  write_file(d / "short.txt", "a few words only\n");
  write_file(d / "empty.txt", "");
  for (const char* file : {"short.txt", "empty.txt"}) {
    CAPTURE(file);
    const Result r = train("--set data.train_path=" + quote(d / file));
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find("data.train_path") != std::string::npos, r.output);
  }
}
