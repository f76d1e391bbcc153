// The research workflow on tiny runs: a sweep's runs, reuse on restart, its results table and plots; the attention
// map grid (one panel per layer x head, size by the documented rule).
#include <doctest/doctest.h>

#include <cairo.h>

#include <sstream>

#include "train/tools/plot.h"
#include "tests/tiny_run.h"

using namespace hr;
using namespace hr::testing;

namespace {

std::pair<int, int> png_size(const std::string& path) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  const std::pair<int, int> wh{cairo_image_surface_get_width(s), cairo_image_surface_get_height(s)};
  cairo_surface_destroy(s);
  return wh;
}

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// the first n comma-separated columns of every line
std::string first_columns(const std::string& csv, int n) {
  std::string out;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    size_t end = 0;
    for (int c = 0; c < n && end != std::string::npos; ++c) end = line.find(',', end + (c > 0));
    out += line.substr(0, end) + "\n";
  }
  return out;
}

int count_substr(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("sweep: one run per head count and seed, reused on restart, table and plots") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string out = d / "sweep";
  const Result first = headroom("sweep " + quote(cfg) + " --set train.max_steps=6 --heads 1,2 --seeds 2 --out " + quote(out));
  REQUIRE_MESSAGE(first.code == 0, first.output);
  for (const char* run : {"heads1-seed0", "heads1-seed1", "heads2-seed0", "heads2-seed1"})
    CHECK(fs::exists(out + "/" + std::string(run) + "/result.json"));
  // head_dim = d_model / heads, written into each run's resolved config
  CHECK(read_file(out + "/heads2-seed0/config.yaml").find("head_dim: 8") != std::string::npos);
  CHECK(read_file(out + "/heads1-seed0/config.yaml").find("head_dim: 16") != std::string::npos);

  const std::string csv = read_file(out + "/results.csv");
  CHECK(count_lines(csv) == 3);  // header + one row per head count
  CHECK(csv.find("\n1,16,") != std::string::npos);
  CHECK(csv.find("\n2,8,") != std::string::npos);
  const std::string md = read_file(out + "/results.md");
  CHECK(md.find("| 1 | 16 |") != std::string::npos);
  CHECK(md.find("(2) |") != std::string::npos);  // two seeds per row
  // each run's report linked from its row, and a page comparing all runs that links them too
  CHECK(md.find("| [seed 0](heads1-seed0/report.html), [seed 1](heads1-seed1/report.html) |") != std::string::npos);
  CHECK(md.find("All runs compared: [report.html](report.html)") != std::string::npos);
  CHECK(read_file(out + "/heads2-seed1/report.html").find("data-section=\"curves\"") != std::string::npos);
  const std::string compared = read_file(out + "/report.html");
  CHECK(compared.find("<a href=\"heads2-seed1/report.html\">report</a>") != std::string::npos);
  CHECK(compared.find("data-section=\"config-diff\"") != std::string::npos);
  CHECK(png_size(out + "/accuracy_vs_heads.png") == std::pair<int, int>{kLinePlotWidth, kLinePlotHeight});
  CHECK(png_size(out + "/latency_vs_heads.png") == std::pair<int, int>{kLinePlotWidth, kLinePlotHeight});

  // started again: every run is reused, nothing retrained, same table
  const auto stamp = fs::last_write_time(out + "/heads2-seed1/checkpoint-last.safetensors");
  const Result again = headroom("sweep " + quote(cfg) + " --set train.max_steps=6 --heads 1,2 --seeds 2 --out " + quote(out));
  REQUIRE_MESSAGE(again.code == 0, again.output);
  CHECK(again.output.find("reusing") != std::string::npos);
  CHECK(again.output.find("training") == std::string::npos);
  CHECK(again.output.find("writing " + out + "/heads") == std::string::npos);  // the run reports are current
  CHECK(fs::last_write_time(out + "/heads2-seed1/checkpoint-last.safetensors") == stamp);
  CHECK(read_file(out + "/results.csv") == csv);

  // --remeasure: every run timed again, nothing retrained, the metric column unchanged
  const Result timed = headroom("sweep " + quote(cfg) + " --set train.max_steps=6 --heads 1,2 --seeds 2 --remeasure --out " +
                                quote(out));
  REQUIRE_MESSAGE(timed.code == 0, timed.output);
  CHECK(count_substr(timed.output, "sweep: timing ") == 4);
  CHECK(timed.output.find("training") == std::string::npos);
  CHECK(fs::last_write_time(out + "/heads2-seed1/checkpoint-last.safetensors") == stamp);
  CHECK(first_columns(read_file(out + "/results.csv"), 6) == first_columns(csv, 6));  // up to the metric's sd

  // an interrupted run (no result.json) is finished, the others reused
  fs::remove(out + "/heads1-seed1/result.json");
  const Result resumed = headroom("sweep " + quote(cfg) + " --set train.max_steps=6 --heads 1,2 --seeds 2 --out " + quote(out));
  REQUIRE_MESSAGE(resumed.code == 0, resumed.output);
  CHECK(resumed.output.find("heads1-seed1") != std::string::npos);
  CHECK(fs::exists(out + "/heads1-seed1/result.json"));
}

TEST_CASE("sweep: a head count that does not divide d_model is a config error") {
  TempDir d;
  const std::string cfg = setup(d);
  const Result r = headroom("sweep " + quote(cfg) + " --heads 3 --out " + quote(d / "s"));
  CHECK(r.code == 2);
  CHECK(r.output.find("3 heads do not divide d_model 16") != std::string::npos);
}

TEST_CASE("attention: a layers x heads grid of maps, and a single large map") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string run = d / "run";
  REQUIRE(headroom("train --quiet " + quote(cfg) + " --set train.max_steps=3 --out " + quote(run)).code == 0);
  const Result r = headroom("attention --run " + quote(run) + " --text 'play the song now' --out " + quote(d / "a.png"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  // 2 layers x 2 heads; T = [CLS] + the text's wordpieces (the tiny learned vocabulary splits words) + [SEP]
  const size_t at = r.output.find("2 x 2 maps of ");
  REQUIRE_MESSAGE(at != std::string::npos, r.output);
  const int T = std::stoi(r.output.substr(at + 14));
  CHECK(T >= 6);
  HeatmapGrid g;
  g.grid_rows = 2, g.grid_cols = 2, g.rows = T, g.cols = T;
  g.x_labels = g.y_labels = std::vector<std::string>(static_cast<size_t>(T), "t");
  g.panels.resize(4, HeatmapPanel{std::vector<float>(static_cast<size_t>(T * T), 0.f), false, ""});
  const HeatmapGridLayout layout = heatmap_grid_layout(g);
  CHECK(png_size(d / "a.png") == std::pair<int, int>{layout.width, layout.height});

  const Result one = headroom("attention --run " + quote(run) + " --text 'play the song now' --layer 1 --head 0 --out " +
                              quote(d / "one.png"));
  REQUIRE_MESSAGE(one.code == 0, one.output);
  g.grid_rows = g.grid_cols = 1;
  g.panels.resize(1);
  const HeatmapGridLayout single = heatmap_grid_layout(g);
  CHECK(png_size(d / "one.png") == std::pair<int, int>{single.width, single.height});
  CHECK(headroom("attention --run " + quote(run) + " --text x --layer 5 --head 0").code == 1);
}
