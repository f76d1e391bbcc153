// headroom report: the page of a tiny run, of a gated run and of a two-run comparison has every section, every image
// decodes, nothing in it reaches outside the page and text is escaped; a QA run's page breaks its errors down; a RUN
// that is not a run directory or a bad metrics.jsonl line exits 2 naming the file (and line). The pieces (metrics
// reader, breakdowns, HTML helpers) are checked on hand-made cases.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <sstream>

#include "tests/mlm_run.h"
#include "tests/report_page.h"
#include "tests/tiny_run.h"
#include "train/tasks/classification_breakdown.h"
#include "train/tasks/qa_breakdown.h"
#include "train/tools/html.h"
#include "train/tools/run_metrics.h"

using namespace hr;
using namespace hr::testing;

namespace {

// The tiny data with the alarm intent renamed to a label that must be escaped.
const std::string kOddLabel = "al<arm> & \"co\"";

std::string tiny_odd_setup(const TempDir& d) {
  auto rename = [](std::vector<std::pair<std::string, std::string>> rows) {
    for (auto& [text, label] : rows)
      if (label == "alarm") label = kOddLabel;
    return rows;
  };
  write_jsonl(d / "train.jsonl", rename(tiny_rows(60, 0)));
  write_jsonl(d / "eval.jsonl", rename(tiny_rows(15, 3)));
  write_file(d / "tiny.yaml", tiny_config(d));
  return d / "tiny.yaml";
}

std::string train_run(const std::string& cfg, const std::string& out, const std::string& sets = "") {
  const Result r = headroom("train --quiet " + quote(cfg) + sets + " --out " + quote(out));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  return out;
}

// Runs `headroom report ARGS --out OUT` and returns the page.
std::string report(const std::string& args, const std::string& out) {
  const Result r = headroom("report " + args + " --out " + quote(out));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("wrote " + out) != std::string::npos);
  return read_file(out);
}

void check_images_and_references(const std::string& html, size_t at_least) {
  const std::vector<PageImage> images = page_images(html);
  CHECK(images.size() >= at_least);
  for (const PageImage& img : images) CHECK_MESSAGE(img.decodes, "image '" << img.alt << "' does not decode");
  const std::vector<std::string> outside = external_references(html);
  CHECK_MESSAGE(outside.empty(), "the page reaches outside: " << (outside.empty() ? "" : outside.front()));
  // the one script is small: the check that every image decoded
  CHECK(html.find("<script") == html.rfind("<script"));
  CHECK(html.find("</script>") - html.find("<script") < 400);
  CHECK(html.find("Content-Security-Policy\" content=\"default-src 'none'; img-src data:") != std::string::npos);
}

}  // namespace

TEST_CASE("html: escaping, base64, PNG dimensions, tables") {
  CHECK(html_escape("a<b> & \"c\" 'd'") == "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_encode(std::string("\0\xff\x10", 3)) == "AP8Q");
  CHECK_THROWS_WITH_AS(png_dimensions("GIF89a"), doctest::Contains("not a PNG"), Error);
  std::string png = "\x89PNG\r\n\x1a\n" + std::string("\0\0\0\x0dIHDR", 8) + std::string("\0\0\x02\x6c\0\0\x01\x68", 8);
  CHECK(png_dimensions(png) == std::pair{620, 360});
  const std::string t = html_table({"name", "n"}, {{"<x>", "3"}}, {1});
  CHECK(t.find("<td>&lt;x&gt;</td><td class=\"num\">3</td>") != std::string::npos);
  CHECK(t.find("<th class=\"num\">n</th>") != std::string::npos);
}

TEST_CASE("the page checks: sections, images that do and do not decode, references that would leave the page") {
  CHECK(page_sections("<section id=\"r0-summary\" data-section=\"summary\">x</section><section id=\"r0-curves\" "
                      "data-section=\"curves\">") == std::vector<std::string>{"summary", "curves"});
  const std::string png = "\x89PNG\r\n\x1a\n" + std::string("\0\0\0\x0dIHDR", 8);
  const auto images = page_images("<img src=\"data:image/png;base64," + base64_encode(png) +
                                  "\" alt=\"cut\" width=\"1\" height=\"1\"><img src=\"x.png\" alt=\"file\">");
  REQUIRE(images.size() == 2);
  CHECK_FALSE(images[0].decodes);  // a PNG's first bytes only
  CHECK_FALSE(images[1].decodes);
  CHECK(external_references("<img src=\"data:image/png;base64,AAAA\" alt=\"x\"><a href=\"#r0\">x</a>").empty());
  for (const char* bad : {"<img src=\"x.png\">", "<a href=\"http://example.com\">", "<p>see HTTPS://x</p>",
                          "<style>body { background: url(x.png) }</style>", "<link rel=\"stylesheet\">",
                          "<style>@import 'a.css';</style>", "<script src=\"//cdn.example/x.js\"></script>",
                          "<iframe title=\"x\"></iframe>", "<a href=\"report.html\">"})
    CHECK_MESSAGE(!external_references(bad).empty(), bad);
}

TEST_CASE("classification breakdown: the most confused pairs and the worst labels on a hand-made case") {
  // labels 0 a, 1 b, 2 c, 3 d (never seen): 0 -> 1 three times, 2 -> 1 once, 1 -> 0 once
  const std::vector<int32_t> gold = {0, 0, 0, 0, 0, 1, 1, 1, 2, 2};
  const std::vector<int32_t> pred = {1, 1, 1, 0, 0, 1, 1, 0, 2, 1};
  const auto pairs = most_confused_pairs(gold, pred, 2);
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].gold == 0);
  CHECK(pairs[0].predicted == 1);
  CHECK(pairs[0].count == 3);
  CHECK(pairs[1].gold == 1);  // (1, 0) and (2, 1) tie at 1: the smaller gold id first
  CHECK(pairs[1].predicted == 0);
  const auto worst = worst_labels(gold, pred, 4, 10);
  REQUIRE(worst.size() == 3);  // d is neither gold nor predicted
  // a: tp 2, support 5, predicted 3 -> F1 4/8 = 0.5; b: tp 2, support 3, predicted 6 -> 4/9; c: tp 1, 2, 1 -> 2/3
  CHECK(worst[0].label == 1);
  CHECK(worst[0].f1 == doctest::Approx(4.0 / 9));
  CHECK(worst[0].precision == doctest::Approx(2.0 / 6));
  CHECK(worst[0].recall == doctest::Approx(2.0 / 3));
  CHECK(worst[1].label == 0);
  CHECK(worst[2].label == 2);
  const auto tables = classification_breakdown(gold, pred, {"a", "b", "c", "d"}, "eval", 15);
  REQUIRE(tables.size() == 2);
  CHECK(tables[0].note.find("5 of 10 eval rows") == 0);
  CHECK(tables[0].rows[0] == std::vector<std::string>{"a", "b", "3", "60.0%"});
  CHECK(tables[1].rows[0][0] == "b");
  CHECK(tables[1].rows[0][1] == "0.444");
}

TEST_CASE("qa breakdown: question types, answer length buckets, scores per bucket") {
  CHECK(question_type("What is the capital of France?") == "what");
  CHECK(question_type("In which year did it end") == "which");
  CHECK(question_type("Whose book is it") == "who");
  CHECK(question_type("How many legs does a spider have") == "how many");
  CHECK(question_type("how did it end") == "how");
  CHECK(question_type("Name the river.") == "other");
  CHECK(question_type("Somewhat odd") == "other");  // whole words only
  CHECK(answer_length_bucket(0) == "1");
  CHECK(answer_length_bucket(3) == "3");
  CHECK(answer_length_bucket(5) == "4-5");
  CHECK(answer_length_bucket(7) == "6-10");
  CHECK(answer_length_bucket(11) == "11+");
  auto q = [](const std::string& id, const std::string& question, const std::string& answer) {
    return QaExample{id, question, "a context", "", {Answer{answer, 0}}};
  };
  const std::vector<QaExample> gold = {q("1", "who wrote it", "Ann"), q("2", "who read it", "Bob Smith"),
                                       q("3", "when was it", "in May 1990")};
  const std::map<std::string, std::string> pred = {{"1", "Ann"}, {"2", "Bob"}, {"3", "June"}};
  const auto tables = qa_breakdown(gold, pred, QaMetric::squad, "eval");
  REQUIRE(tables.size() == 2);
  CHECK(tables[0].title == "by answer length");
  CHECK(tables[0].rows == std::vector<std::vector<std::string>>{
                              {"1", "1", "100.0", "100.0"}, {"2", "1", "0.0", "66.7"}, {"3", "1", "0.0", "0.0"}});
  CHECK(tables[1].rows == std::vector<std::vector<std::string>>{{"who", "2", "50.0", "83.3"},
                                                                {"when", "1", "0.0", "0.0"}});
}

TEST_CASE("metrics.jsonl: rows read back, wall time over sessions, a torn last line skipped, a bad line named") {
  TempDir d;
  const std::string path = d / "metrics.jsonl";
  write_file(path,
             "{\"step\":0,\"session\":{\"host\":\"h\",\"device\":\"cpu\"}}\n"
             "{\"step\":10,\"epoch\":0,\"loss\":2.0,\"lr\":0.1,\"tokens_per_s\":5,\"step_ms\":3,\"tokens\":100,"
             "\"grad_norm\":1.5,\"grad_norm_max\":2,\"elapsed_s\":4}\n"
             "{\"step\":10,\"eval\":{\"accuracy\":0.5,\"macro_f1\":null},\"primary\":\"accuracy\",\"eval_s\":0.5,"
             "\"elapsed_s\":5,\"gates\":{\"open_probability\":[[0.9,0.1],[]],\"expected_open_heads\":1.0}}\n"
             "{\"step\":11,\"skipped\":\"non-finite loss or gradient\"}\n"
             "{\"step\":10,\"session\":{\"host\":\"h\",\"resumed\":true}}\n"
             "{\"step\":20,\"epoch\":1,\"loss\":1.0,\"lr\":0.1,\"tokens_per_s\":5,\"step_ms\":3,\"tokens\":300,"
             "\"elapsed_s\":2}\n"
             "{\"step\":20,\"eval\":{\"accuracy\":0.75},\"elapsed_s\":3}\n"
             "{\"step\":20,\"test\":{\"accuracy\":0.7},\"checkpoint\":\"best\",\"elapsed_s\":3.5}\n"
             "{\"step\":21,\"lo");
  const RunMetrics m = read_run_metrics(path);
  CHECK(m.sessions.size() == 2);
  REQUIRE(m.train.size() == 2);
  CHECK(m.train[0].grad_norm == 1.5);
  CHECK(std::isnan(m.train[1].grad_norm));
  REQUIRE(m.evals.size() == 2);
  CHECK(std::isnan(m.evals[0].metrics.at("macro_f1")));
  CHECK(m.evals[0].gate_open == std::vector<std::vector<float>>{{0.9f, 0.1f}, {}});
  CHECK(m.skipped == std::vector<int64_t>{11});
  REQUIRE(m.test);
  CHECK(m.test->checkpoint == "best");
  CHECK(m.primary() == "accuracy");
  CHECK(m.best_eval() == &m.evals[1]);
  CHECK(m.wall_s() == doctest::Approx(5 + 3.5));  // each session's last elapsed_s
  CHECK(m.tokens_at(15) == doctest::Approx(200));
  CHECK(m.note.find(path + ":9: a torn last line") == 0);

  write_file(path, "{\"step\":1,\"loss\":1}\n\n[1,2]\n{\"step\":2,\"loss\":1}\n");
  CHECK_THROWS_WITH_AS(read_run_metrics(path), (path + ":3: not a metrics row (a JSON object with an integer "
                                                       "\"step\")").c_str(), UsageError);
  write_file(path, "{\"step\":1,\"eval\":{\"accuracy\":\"high\"}}\n");
  CHECK_THROWS_WITH_AS(read_run_metrics(path), (path + ":1: metric 'accuracy' is not a number").c_str(), UsageError);
}

TEST_CASE("report of a tiny run: every section, every image decodes, nothing outside the page, text escaped") {
  TempDir d;
  const std::string run = train_run(tiny_odd_setup(d), d / "run");
  const std::string html = report(quote(run), d / "report.html");
  const std::vector<std::string> sections = page_sections(html);
  CHECK(sections == std::vector<std::string>{"summary", "curves", "errors", "attention", "config"});
  // curves: loss, accuracy, macro_f1, lr, speed, gradient norm, loss and accuracy against tokens; the attention grid
  check_images_and_references(html, 9);
  CHECK(html.find("<h2>Where the model goes wrong</h2>") != std::string::npos);
  CHECK(html.find("most confused label pairs") != std::string::npos);
  CHECK(html.find("labels with the lowest F1") != std::string::npos);
  // the label is shown as written, never as markup
  CHECK(html.find("al&lt;arm&gt; &amp; &quot;co&quot;") != std::string::npos);
  CHECK(html.find(kOddLabel) == std::string::npos);
  // the summary: machine, precision, wall time, best and final metrics
  for (const char* s : {"device and precision", "cpu, f32", "wall time", "accuracy (primary)", "best eval (step",
                        "final eval (step 20)", "OpenMP threads"})
    CHECK_MESSAGE(html.find(s) != std::string::npos, s);
  CHECK(html.size() < 3u << 20);

  SUBCASE("the default output is RUN/report.html; --no-eval makes no pass over the data") {
    const Result r = headroom("report --no-eval " + quote(run));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    const std::string page = read_file(run + "/report.html");
    CHECK(page.find("not computed (--no-eval)") != std::string::npos);
    CHECK(page.find("most confused label pairs") == std::string::npos);
    CHECK(count_of(page_sections(page), "errors") == 1);
  }

  SUBCASE("the summary says whether the run finished: its metrics end with a done row") {
    CHECK(html.find("20 (") != std::string::npos);
    CHECK(html.find("epoch(s)), finished") != std::string::npos);
    std::string rows, line;
    for (std::istringstream in(read_file(run + "/metrics.jsonl")); std::getline(in, line);)
      if (line.find("\"done\"") == std::string::npos) rows += line + "\n";
    write_file(run + "/metrics.jsonl", rows);  // as a run killed before its end leaves it
    const std::string page = report("--no-eval " + quote(run), d / "killed.html");
    CHECK(page.find("not finished (running, stopped or killed: headroom train --resume") != std::string::npos);
  }
}

TEST_CASE("report comparing a plain and a gated run: overlaid curves, config differences, results, gates") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string plain = train_run(cfg, d / "plain");
  const std::string gated = train_run(cfg, d / "gated",
                                      " --set model.layers.0.attention.gates.type=l0 --set train.lr=1e-2");
  const std::string html = report(quote(plain) + " " + quote(gated), d / "compare.html");
  const std::vector<std::string> sections = page_sections(html);
  REQUIRE(sections.size() >= 3);
  CHECK(std::vector<std::string>(sections.begin(), sections.begin() + 3) ==
        std::vector<std::string>{"comparison", "config-diff", "results"});
  for (const char* s : {"summary", "curves", "errors", "attention", "config"})
    CHECK_MESSAGE(count_of(sections, s) == 2, s);
  CHECK(count_of(sections, "gates") == 1);
  check_images_and_references(html, 2 * 9 + 6 + 3);
  // only the keys that differ, each run's value in its column
  const size_t diff = html.find("data-section=\"config-diff\"");
  const std::string diff_section = html.substr(diff, html.find("</section>", diff) - diff);
  CHECK(diff_section.find("<td>train.lr</td><td>3e-3</td><td>1e-2</td>") != std::string::npos);
  CHECK(diff_section.find("<td>model.layers.0.attention.gates.type</td><td>(not set)</td><td>l0</td>") !=
        std::string::npos);
  CHECK(diff_section.find("train.batch_size") == std::string::npos);
  const size_t results = html.find("data-section=\"results\"");
  const std::string results_section = html.substr(results, html.find("</section>", results) - results);
  CHECK(results_section.find("<td>plain</td>") != std::string::npos);
  CHECK(results_section.find("<td>gated</td>") != std::string::npos);
  CHECK(results_section.find("best accuracy (step)") != std::string::npos);
  // the gates: each head over training, the expected open heads, the kept heads
  const size_t gates = html.find("data-section=\"gates\"");
  REQUIRE(gates != std::string::npos);
  const std::string gates_section = html.substr(gates, html.find("</section>", gates) - gates);
  CHECK(page_images(gates_section).size() == 3);
  CHECK(gates_section.find("The gates keep ") != std::string::npos);
}

TEST_CASE("report of a QA run: exact match and F1 by answer length and question type") {
  TempDir d;
  const std::vector<std::array<std::string, 3>> qa = {
      {"who wrote the letter", "the letter was written by anna in may .", "anna"},
      {"when was the letter written", "the letter was written by anna in may .", "in may"},
      {"what did the cat eat", "the cat ate a small grey mouse at noon .", "a small grey mouse"},
      {"where is the lamp", "the lamp is on the old wooden table .", "on the old wooden table"},
      {"how many dogs ran", "three dogs ran across the wide field .", "three"},
      {"why did he stay", "he stayed because the road was closed .", "because the road was closed"}};
  write_squad(d / "qa.json", qa);
  write_file(d / "qa.yaml", "model:\n  type: encoder_span_qa\n  d_model: 16\n  ffn_dim: 32\n  max_len: 40\n"
                            "  dropout: 0.0\n  layers:\n    - repeat: 1\n      attention: {heads: 2, head_dim: 8}\n"
                            "tokenizer:\n  vocab_size: 80\ndata:\n  task: squad\n  train_path: " + (d / "qa.json") +
                            "\n  eval_path: " + (d / "qa.json") + "\n  max_query_len: 12\n  doc_stride: 16\n"
                            "train:\n  max_steps: 4\n  batch_size: 3\n  log_every: 1\n  eval_every: 2\n");
  const std::string run = train_run(d / "qa.yaml", d / "run");
  const std::string html = report(quote(run), d / "qa.html");
  CHECK(page_sections(html) == std::vector<std::string>{"summary", "curves", "errors", "attention", "config"});
  check_images_and_references(html, 8);
  for (const char* s : {"by answer length", "by question type", "<td>how many</td>", "<td>why</td>", "exact_match"})
    CHECK_MESSAGE(html.find(s) != std::string::npos, s);
  // a question and a context for the attention maps, given before the run directory
  const std::string given = report("--text 'who ran' --text 'the dog ran .' " + quote(run), d / "given.html");
  CHECK(given.find("on: \u201cwho ran | the dog ran .\u201d") != std::string::npos);
  const Result one = headroom("report --text 'who ran' " + quote(run) + " --out " + quote(d / "one.html"));
  CHECK(one.code == 2);
  CHECK(one.output.find("this run's inputs are question, then context") != std::string::npos);
}

TEST_CASE("report of a pretraining run: perplexity and masked accuracy, the attention example given by --text") {
  TempDir d;
  const std::string run = train_run(mlm_setup(d), d / "run");
  const std::string plain = report(quote(run), d / "plain.html");
  CHECK(plain.find("this task (mlm) has no error breakdown") != std::string::npos);
  CHECK(plain.find("No example text") != std::string::npos);
  const std::string html = report(quote(run) + " --text 'the river flows into the sea'", d / "mlm.html");
  CHECK(page_sections(html) == std::vector<std::string>{"summary", "curves", "errors", "attention", "config"});
  check_images_and_references(html, 8);
  std::vector<std::string> alts;
  for (const PageImage& img : page_images(html)) alts.push_back(img.alt);
  for (const char* alt : {"eval perplexity", "eval masked_accuracy", "eval mlm_loss", "attention maps"})
    CHECK_MESSAGE(count_of(alts, alt) == 1, alt);
  CHECK(count_of(alts, "eval masked_tokens") == 0);  // the eval set's size, the same at every evaluation
  CHECK(html.find("masked_accuracy (primary)") != std::string::npos);
  CHECK(html.find("&#39;the river flows into the sea&#39;") == std::string::npos);
  CHECK(html.find("the river flows into the sea") != std::string::npos);
}

TEST_CASE("report: a RUN that is not a run directory, or a bad metrics line, exits 2 naming the file") {
  TempDir d;
  const Result none = headroom("report " + quote(d / "missing"));
  CHECK(none.code == 2);
  CHECK(none.output.find(d / "missing is not a run directory") != std::string::npos);
  fs::create_directories(d / "half");
  write_file(d / "half/config.yaml", "model: {}\n");
  const Result half = headroom("report " + quote(d / "half"));
  CHECK(half.code == 2);
  CHECK(half.output.find("has no metrics.jsonl") != std::string::npos);

  const std::string run = train_run(setup(d), d / "run", " --set train.max_steps=6");
  std::string metrics = read_file(run + "/metrics.jsonl");
  write_file(run + "/metrics.jsonl", metrics.substr(0, metrics.find('\n') + 1) + "{\"step\": 3, oops\n" +
                                         metrics.substr(metrics.find('\n') + 1));
  const Result bad = headroom("report " + quote(run));
  CHECK(bad.code == 2);
  CHECK(bad.output.find(run + "/metrics.jsonl:2: not a metrics row") != std::string::npos);
  CHECK_FALSE(fs::exists(run + "/report.html"));

  // a torn last line (a run killed while writing it) is a note, not an error
  write_file(run + "/metrics.jsonl", metrics + "{\"step\": 7, \"lo");
  const Result torn = headroom("report " + quote(run));
  CHECK_MESSAGE(torn.code == 0, torn.output);
  CHECK(torn.output.find("metrics.jsonl:" ) != std::string::npos);
  CHECK(read_file(run + "/report.html").find("a torn last line") != std::string::npos);

  // a config.yaml whose alias holds itself: the comparison of two runs walked it until the stack ran out
  fs::create_directories(d / "cycle");
  write_file(d / "cycle/config.yaml", "model: &m {layers: [*m]}\n");
  write_file(d / "cycle/metrics.jsonl", "{\"step\": 0}\n");
  const Result cycle = headroom("report " + quote(d / "cycle") + " " + quote(run) + " --out " + quote(d / "c.html"));
  CHECK(cycle.code == 2);
  CHECK_MESSAGE(cycle.output.find(d / "cycle/config.yaml:1: model.layers[0].layers[0]") != std::string::npos,
                cycle.output);
  CHECK_FALSE(fs::exists(d / "c.html"));
}
