// PNG figures: image sizes follow the documented size rules (expected sizes computed here by hand), and pixels at
// known places carry the expected colours (viridis anchors, the grey of marked panels, series colours).
#include <cairo.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "tests/error_message.h"
#include "tests/temp_dir.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "train/tools/plot.h"

namespace fs = std::filesystem;
using namespace hr;
using hr::testing::error_message;
using hr::testing::TempDir;
using hr::testing::write_file;
using Color = std::array<uint8_t, 3>;

namespace {

// Width and height from the PNG signature and IHDR chunk (big-endian at bytes 16..23).
std::pair<int, int> png_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char b[24] = {};
  in.read(reinterpret_cast<char*>(b), 24);
  REQUIRE(in.gcount() == 24);
  REQUIRE(std::string(reinterpret_cast<char*>(b) + 1, 3) == "PNG");
  REQUIRE(std::string(reinterpret_cast<char*>(b) + 12, 4) == "IHDR");
  auto be32 = [&](int at) { return (b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]; };
  return {be32(16), be32(20)};
}

// The decoded pixels of a PNG.
class Image {
 public:
  explicit Image(const std::string& path) : surface_(cairo_image_surface_create_from_png(path.c_str())) {
    REQUIRE(cairo_surface_status(surface_) == CAIRO_STATUS_SUCCESS);
  }
  ~Image() { cairo_surface_destroy(surface_); }
  Color at(int x, int y) const {
    REQUIRE(x >= 0);
    REQUIRE(y >= 0);
    REQUIRE(x < cairo_image_surface_get_width(surface_));
    REQUIRE(y < cairo_image_surface_get_height(surface_));
    const unsigned char* row = cairo_image_surface_get_data(surface_) + y * cairo_image_surface_get_stride(surface_);
    const uint32_t p = reinterpret_cast<const uint32_t*>(row)[x];
    return {uint8_t(p >> 16), uint8_t(p >> 8), uint8_t(p)};
  }

 private:
  cairo_surface_t* surface_;
};

bool near(Color a, Color b, int tolerance = 1) {
  for (int k = 0; k < 3; ++k)
    if (std::abs(int(a[k]) - int(b[k])) > tolerance) return false;
  return true;
}

std::string show(Color c) {
  return "(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ")";
}

#define CHECK_COLOR(actual, expected)                                      \
  do {                                                                     \
    const Color a_ = (actual), e_ = (expected);                            \
    CHECK_MESSAGE(near(a_, e_), show(a_) << " is not " << show(e_));       \
  } while (0)

const Color kViridisBottom = {0x44, 0x01, 0x54}, kViridisMiddle = {0x21, 0x91, 0x8c}, kViridisTop = {0xfd, 0xe7, 0x25};
const Color kWhite = {255, 255, 255};

// A grid of n x n panels (n >= 3) that all hold value[i][j] = (i + j) / (2n - 2), except three pinned cells.
HeatmapGrid test_grid(int64_t grid_rows, int64_t grid_cols, int64_t n, bool labels) {
  REQUIRE(n >= 3);
  HeatmapGrid g;
  g.title = "attention, example 0";
  g.grid_rows = grid_rows;
  g.grid_cols = grid_cols;
  g.rows = g.cols = n;
  for (int64_t r = 0; r < grid_rows; ++r) g.row_titles.push_back("layer " + std::to_string(r));
  for (int64_t c = 0; c < grid_cols; ++c) g.col_titles.push_back("head " + std::to_string(c));
  if (labels) {
    const char* tokens[] = {"[CLS]", "how", "do", "i", "reset", "my", "pin", "##code", "please", "[SEP]", "[PAD]"};
    for (int64_t i = 0; i < n; ++i) g.x_labels.push_back(tokens[i % 11]);
    g.y_labels = g.x_labels;
  }
  for (int64_t p = 0; p < grid_rows * grid_cols; ++p) {
    HeatmapPanel panel;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) panel.values.push_back(float(i + j) / float(2 * n - 2));
    panel.values[0] = 1.0f;          // (0, 0): top of the colormap
    panel.values[n + 1] = 0.0f;      // (1, 1): bottom
    panel.values[2 * n + 2] = 0.5f;  // (2, 2): middle
    g.panels.push_back(panel);
  }
  return g;
}

}  // namespace

TEST_CASE("viridis interpolates matplotlib's anchors") {
  CHECK(viridis(0) == kViridisBottom);
  CHECK(viridis(0.5) == kViridisMiddle);
  CHECK(viridis(1) == kViridisTop);
  CHECK(viridis(-3) == kViridisBottom);
  CHECK(viridis(7) == kViridisTop);
  CHECK(viridis(std::nan("")) == kViridisBottom);
  CHECK(viridis(0.05) == Color{70, 19, 101});  // halfway between #440154 and #482475, rounded
}

TEST_CASE("nice_ticks covers the range with round steps") {
  auto check = [](std::vector<double> got, std::vector<double> want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
  };
  check(nice_ticks(0.31, 0.93), {0.2, 0.4, 0.6, 0.8, 1.0});
  check(nice_ticks(0, 100), {0, 20, 40, 60, 80, 100});
  check(nice_ticks(-1.3, 2.2), {-2, -1, 0, 1, 2, 3});
  check(nice_ticks(0, 12.5, 5), {0, 2.5, 5, 7.5, 10, 12.5});
  check(nice_ticks(3, 3), {2.7, 2.8, 2.9, 3.0, 3.1, 3.2, 3.3});  // widened by 10%
}

TEST_CASE("line plot: 900x600, markers where the frame puts them, errors name the path") {
  TempDir tmp;
  LinePlot plot;
  plot.title = "accuracy by number of heads";
  plot.x_label = "heads per layer";
  plot.y_label = "accuracy";
  plot.log2_x = true;
  plot.series.push_back({"intent (dev)", {1, 2, 4, 8, 16}, {0.52, 0.71, 0.83, 0.90, 0.93}, {}});
  plot.series.push_back({"QA F1", {1, 2, 4, 8, 16}, {0.30, 0.45, NAN, 0.66, 0.70}, {0.02, 0.03, 0.0, 0.02, 0.01}});
  plot.series.push_back({"pruned from 16", {2, 4, 8}, {0.60, 0.78, 0.88}, {}});
  const std::string path = tmp / "heads.png";
  write_line_plot_png(path, plot);
  CHECK(png_size(path) == std::pair{900, 600});

  const LinePlotFrame f = line_plot_frame(plot);
  CHECK(f.x_ticks == std::vector<double>{0, 1, 2, 3, 4});  // 2^0 .. 2^4
  CHECK(f.y_lo == doctest::Approx(0.2));  // nice ticks around 0.28 .. 0.94
  CHECK(f.y_hi == doctest::Approx(1.0));
  CHECK(f.px(1) > f.left);
  CHECK(f.px(16) < f.right);
  CHECK(f.px(4) == doctest::Approx((f.px(2) + f.px(8)) / 2));  // log spacing

  Image img(path);
  const Color tab_blue = {31, 119, 180}, tab_orange = {255, 127, 14};
  CHECK_COLOR(img.at(int(f.px(16)), int(f.py(0.93))), tab_blue);
  CHECK_COLOR(img.at(int(f.px(1)), int(f.py(0.30))), tab_orange);
  // Lines join the points, and a NaN point breaks its line: pixels on the segments' midpoints (off the grid lines).
  auto on_segment = [&](double x0, double y0, double x1, double y1) {
    const double px = (f.px(x0) + f.px(x1)) / 2 + 3, t = (px - f.px(x0)) / (f.px(x1) - f.px(x0));
    return img.at(int(px), int(f.py(y0) + t * (f.py(y1) - f.py(y0))));
  };
  CHECK_COLOR(on_segment(1, 0.52, 2, 0.71), tab_blue);
  CHECK_COLOR(on_segment(1, 0.30, 2, 0.45), tab_orange);
  CHECK_COLOR(on_segment(2, 0.45, 8, 0.66), kWhite);
  CHECK_COLOR(img.at(3, 3), kWhite);

  SUBCASE("linear axes span the nice ticks") {
    LinePlot curve{"loss", "step", "loss", {{"train", {0, 500, 1000}, {0.9, 0.4, 0.2}, {}}}, false};
    const LinePlotFrame lf = line_plot_frame(curve);
    CHECK(lf.x_lo == 0);
    CHECK(lf.x_hi == 1000);
    CHECK(lf.y_lo == doctest::Approx(0.2));
    CHECK(lf.y_hi == doctest::Approx(1.0));
    write_line_plot_png(tmp / "loss.png", curve);
    CHECK(png_size(tmp / "loss.png") == std::pair{900, 600});
  }
  SUBCASE("errors") {
    CHECK(error_message([&] { write_line_plot_png(tmp / "e.png", LinePlot{}); }).find(tmp / "e.png") == 0);
    LinePlot zero = plot;
    zero.series[0].x[0] = 0;
    CHECK(error_message([&] { write_line_plot_png(tmp / "z.png", zero); }).find("x must be > 0") != std::string::npos);
    LinePlot ragged = plot;
    ragged.series[0].y.pop_back();
    CHECK(error_message([&] { write_line_plot_png(tmp / "r.png", ragged); }).find("5 x values but 4 y values") !=
          std::string::npos);
    const std::string unwritable = tmp / "no/dir/plot.png";
    CHECK(error_message([&] { write_line_plot_png(unwritable, plot); }).find("cannot write plot " + unwritable) == 0);
    CHECK(!fs::exists(unwritable));
  }
}

TEST_CASE("heatmap grid: size rule with token labels, viridis cells, grey marked panels") {
  TempDir tmp;
  HeatmapGrid g = test_grid(3, 4, 6, true);
  g.panels[1 * 4 + 2] = {{}, true, "pruned"};  // layer 1, head 2
  const std::string path = tmp / "grid.png";
  write_heatmap_grid_png(path, g);

  // Labels shown: fixed_w = 32 + 90 + 90 + 3*14 + 4*80 = 574, fixed_h = 32 + 36 + 24 + 2*14 + 3*80 = 360,
  // cell = min((4000-574)/24, (4000-360)/18, 48) = 48.
  const HeatmapGridLayout l = heatmap_grid_layout(g);
  CHECK(l.cell == 48);
  CHECK(l.show_labels);
  CHECK(png_size(path) == std::pair{574 + 24 * 48, 360 + 18 * 48});
  CHECK(l.width == 574 + 24 * 48);
  REQUIRE(l.panel_x.size() == 4);
  REQUIRE(l.panel_y.size() == 3);
  CHECK(l.panel_x[0] == 16 + 90 + 80);
  CHECK(l.panel_x[1] - l.panel_x[0] == 6 * 48 + 80 + 14);
  CHECK(l.panel_y[0] == 16 + 36 + 24);

  Image img(path);
  const int c = l.cell;
  for (int r = 0; r < 3; ++r) {
    for (int h = 0; h < 4; ++h) {
      INFO("panel " << r << ", " << h);
      const int x = l.panel_x[h], y = l.panel_y[r];
      if (r == 1 && h == 2) {
        CHECK_COLOR(img.at(x + 3 * c, y + 3), kMarkedGrey);  // top middle: away from the cross and the label
        CHECK_COLOR(img.at(x + 2, y + 3 * c), kMarkedGrey);
        continue;
      }
      CHECK_COLOR(img.at(x + c / 2, y + c / 2), kViridisTop);
      CHECK_COLOR(img.at(x + c + 1, y + c + 1), kViridisBottom);
      CHECK_COLOR(img.at(x + 3 * c - 1, y + 3 * c - 1), kViridisMiddle);
      CHECK_COLOR(img.at(x + 6 * c - 1, y + 6 * c - 1), kViridisTop);  // (5, 5): (5 + 5) / 10 = 1
    }
  }
}

TEST_CASE("heatmap grid: auto scale, a big grid without labels, one large panel") {
  TempDir tmp;
  SUBCASE("auto scale maps min..max to the colormap's ends") {
    HeatmapGrid g = test_grid(1, 2, 4, false);
    for (auto& p : g.panels)
      for (float& v : p.values) v = 2 + 4 * v;  // 2 .. 6
    g.auto_scale = true;
    write_heatmap_grid_png(tmp / "auto.png", g);
    const HeatmapGridLayout l = heatmap_grid_layout(g);
    CHECK(!l.show_labels);
    Image img(tmp / "auto.png");
    CHECK_COLOR(img.at(l.panel_x[1] + 1, l.panel_y[0] + 1), kViridisTop);
    CHECK_COLOR(img.at(l.panel_x[1] + l.cell + 1, l.panel_y[0] + l.cell + 1), kViridisBottom);
  }
  SUBCASE("12 layers x 12 heads of 64 tokens: too small for labels, at most 4000 px") {
    HeatmapGrid g = test_grid(12, 12, 64, true);
    // With labels: (4000 - (32+90+90+11*14+12*80)) / (12*64) = 3 < 10, so no labels:
    // fixed_w = 32+90+90+154 = 366, fixed_h = 32+36+24+154 = 246, cell = min(3634/768, 3754/768) = 4.
    const HeatmapGridLayout l = heatmap_grid_layout(g);
    CHECK(!l.show_labels);
    CHECK(l.cell == 4);
    write_heatmap_grid_png(tmp / "big.png", g);
    CHECK(png_size(tmp / "big.png") == std::pair{366 + 768 * 4, 246 + 768 * 4});
    Image img(tmp / "big.png");
    CHECK_COLOR(img.at(l.panel_x[11] + 1, l.panel_y[11] + 1), kViridisTop);
  }
  SUBCASE("a single panel gets big cells and labels") {
    HeatmapGrid g = test_grid(1, 1, 11, true);
    // fixed_w = 32+90+90+80 = 292, fixed_h = 32+36+24+80 = 172, cell = 48 (the cap).
    write_heatmap_grid_png(tmp / "one.png", g);
    CHECK(png_size(tmp / "one.png") == std::pair{292 + 11 * 48, 172 + 11 * 48});
    CHECK(heatmap_grid_layout(g).show_labels);
  }
  SUBCASE("errors name the path") {
    HeatmapGrid g = test_grid(2, 2, 3, false);
    g.panels.pop_back();
    CHECK(error_message([&] { write_heatmap_grid_png(tmp / "g.png", g); }).find(tmp / "g.png: 3 panels") == 0);
    g = test_grid(2, 2, 3, false);
    g.panels[1].values.pop_back();
    CHECK(error_message([&] { write_heatmap_grid_png(tmp / "g.png", g); }).find("panel 1 has 8 values") !=
          std::string::npos);
    CHECK(error_message([&] { write_heatmap_grid_png(tmp / "g.png", HeatmapGrid{}); }).find("nothing to plot") !=
          std::string::npos);
    const std::string unwritable = tmp / "missing/g.png";
    CHECK(error_message([&] { write_heatmap_grid_png(unwritable, test_grid(1, 1, 3, false)); })
              .find("cannot write plot " + unwritable) == 0);
  }
}

TEST_CASE("value heatmap: size rule, cell colours, marked cells grey") {
  TempDir tmp;
  ValueHeatmap t;
  t.title = "gate open probability";
  t.rows = 4;
  t.cols = 6;
  for (int i = 0; i < 24; ++i) t.values.push_back(float(i) / 23);
  for (int r = 0; r < 4; ++r) t.row_labels.push_back("layer " + std::to_string(r));
  for (int c = 0; c < 6; ++c) t.col_labels.push_back("head " + std::to_string(c));
  t.marked.assign(24, false);
  t.marked[1 * 6 + 3] = true;
  const std::string path = tmp / "gates.png";
  write_value_heatmap_png(path, t);
  // width = 32 + 90 + 6*64 + 90, height = 32 + 36 + 24 + 4*34
  CHECK(png_size(path) == std::pair{596, 228});
  const ValueHeatmapLayout l = value_heatmap_layout(t);
  CHECK(l.x0 == 16 + 90);
  CHECK(l.y0 == 16 + 36 + 24);
  Image img(path);
  auto top_middle = [&](int r, int c) { return img.at(l.x0 + c * 64 + 32, l.y0 + r * 34 + 3); };
  CHECK_COLOR(top_middle(0, 0), kViridisBottom);
  CHECK_COLOR(top_middle(3, 5), kViridisTop);
  CHECK_COLOR(top_middle(2, 1), viridis(13.0 / 23));
  CHECK_COLOR(top_middle(1, 3), kMarkedGrey);

  t.marked.pop_back();
  CHECK(error_message([&] { write_value_heatmap_png(path, t); }).find(path + ": 23 marks") == 0);
  t.marked.clear();
  t.values.clear();
  CHECK(error_message([&] { write_value_heatmap_png(path, t); }).find(path + ": nothing to plot") == 0);
}

TEST_CASE("in-memory PNGs: the same bytes as the files, a smaller grid by max_side") {
  TempDir tmp;
  LinePlot plot{"loss", "step", "loss", {{"train", {0, 500, 1000}, {0.9, 0.4, 0.2}, {}}}, false};
  write_line_plot_png(tmp / "loss.png", plot);
  CHECK(line_plot_png(plot) == read_file_bytes(tmp / "loss.png"));

  HeatmapGrid g = test_grid(3, 4, 6, true);
  g.max_side = 1200;
  // fixed_w = 574, fixed_h = 360 (as above); cell = min((1200-574)/24, (1200-360)/18) = 26, labels kept
  const HeatmapGridLayout l = heatmap_grid_layout(g);
  CHECK(l.cell == 26);
  CHECK(l.show_labels);
  const std::string bytes = heatmap_grid_png(g);
  write_file(tmp / "grid.png", bytes);
  CHECK(png_size(tmp / "grid.png") == std::pair{574 + 24 * 26, 360 + 18 * 26});
  CHECK(error_message([&] { heatmap_grid_png(HeatmapGrid{}); }).find("heatmap grid ''") == 0);
}

TEST_CASE("line plot: a small plot without legend, faint lines without markers, a log10 y axis") {
  TempDir tmp;
  LinePlot plot;
  plot.title = "perplexity";
  plot.x_label = "step";
  plot.y_label = "perplexity";
  plot.width = 640;
  plot.height = 400;
  plot.legend_width = 0;
  plot.log10_y = true;
  PlotSeries raw{"raw", {0, 100, 200, 300}, {3000, 300, 30, 12}, {}};
  raw.markers = false;
  raw.opacity = 0.3;
  raw.line_width = 1;
  plot.series.push_back(raw);
  const LinePlotFrame f = line_plot_frame(plot);
  CHECK(f.right == 640 - 24);
  CHECK(f.y_ticks == std::vector<double>{1, 2, 3, 4});  // 10 .. 10000 around 12 .. 3000
  CHECK(f.py(100) == doctest::Approx((f.py(10) + f.py(1000)) / 2));
  write_file(tmp / "ppl.png", line_plot_png(plot));
  CHECK(png_size(tmp / "ppl.png") == std::pair{640, 400});
  Image img(tmp / "ppl.png");
  // no marker at a point: the faint line's colour is a light blue, far from the opaque series colour
  const Color point = img.at(int(f.px(100)), int(f.py(300)));
  CHECK(point[0] > 100);
  CHECK(point[0] < 255);

  plot.series[0].y[2] = 0;
  CHECK(error_message([&] { line_plot_png(plot); }).find("on a log10 y axis (y must be > 0)") != std::string::npos);
  plot.series[0].y[2] = 30;
  plot.legend_width = 500;
  CHECK(error_message([&] { line_plot_png(plot); }).find("has no room to draw in") != std::string::npos);
}

TEST_CASE("time heatmap: size rule, columns span the midpoints, rows grouped") {
  TempDir tmp;
  TimeHeatmap m;
  m.title = "gate open probability";
  m.x_label = "step";
  m.x = {100, 200, 400};  // uneven: the last column is twice as wide
  m.group_labels = {"layer 0", "layer 1"};
  m.row_labels = {{"h0", "h1"}, {"h0", "h1", "h2"}};
  m.values = {{{0, 0.5f, 1}, {1, 1, 1}}, {{0, 0, 0}, {1, 0, 0.5f}, {NAN, 1, 1}}};
  const TimeHeatmapLayout l = time_heatmap_layout(m);
  // 5 rows: clamp(420 / 5, 3, 22) = 22 pixels; groups 14 apart
  CHECK(l.row_height == 22);
  CHECK(l.row_labels);
  CHECK(l.width == 900);
  CHECK(l.group_y == std::vector<int>{16 + 36, 16 + 36 + 2 * 22 + 14});
  CHECK(l.height == 16 + 36 + 5 * 22 + 14 + 56 + 16);
  write_file(tmp / "t.png", time_heatmap_png(m));
  CHECK(png_size(tmp / "t.png") == std::pair{l.width, l.height});
  Image img(tmp / "t.png");
  // x spans 50 .. 500 (half a step beyond the ends): column edges at 50, 150, 300, 500
  auto px = [&](double x) { return int(l.left + (x - 50) / 450 * (l.right - l.left)); };
  auto row_y = [&](int group, int row) { return l.group_y[group] + row * 22 + 11; };
  CHECK_COLOR(img.at(px(100), row_y(0, 0)), kViridisBottom);
  CHECK_COLOR(img.at(px(200), row_y(0, 0)), kViridisMiddle);
  CHECK_COLOR(img.at(px(450), row_y(0, 0)), kViridisTop);
  CHECK_COLOR(img.at(px(280), row_y(0, 0)), kViridisMiddle);  // 200's column reaches 300
  CHECK_COLOR(img.at(px(320), row_y(0, 0)), kViridisTop);
  CHECK_COLOR(img.at(px(100), row_y(1, 1)), kViridisTop);
  CHECK_COLOR(img.at(px(100), row_y(1, 2)), kWhite);  // NaN: no value
  CHECK_COLOR(img.at(px(200), row_y(1, 2)), kViridisTop);

  SUBCASE("many rows get thin rows and no row labels") {
    TimeHeatmap big = m;
    big.values = {std::vector<std::vector<float>>(144, {0.f, 0.f, 0.f})};
    big.row_labels = {std::vector<std::string>(144, "h")};
    big.group_labels = {"all"};
    const TimeHeatmapLayout bl = time_heatmap_layout(big);
    CHECK(bl.row_height == 3);  // 420 / 144 = 2, at least 3
    CHECK(!bl.row_labels);
  }
  SUBCASE("errors") {
    TimeHeatmap bad = m;
    bad.x = {100, 100, 400};
    CHECK(error_message([&] { time_heatmap_png(bad); }).find("the x values must increase") != std::string::npos);
    bad = m;
    bad.values[1][2].pop_back();
    CHECK(error_message([&] { time_heatmap_png(bad); }).find("has 2 values for 3 columns") != std::string::npos);
    CHECK(error_message([&] { time_heatmap_png(TimeHeatmap{}); }).find("nothing to plot") != std::string::npos);
  }
}

TEST_CASE("headroom plot: a table's columns as a line per series; errors name the file, line and column") {
  TempDir tmp;
  const char* build = std::getenv("HR_BUILD_ROOT");
  REQUIRE(build != nullptr);
  auto run = [&](const std::string& args) {
    return std::system(("'" + std::string(build) + "/headroom' plot " + args + " >/dev/null 2>&1").c_str());
  };
  // rows of two series interleaved, as a script appends them
  const std::string table = write_file(tmp / "curve.tsv",
                                       "method\tkept\taccuracy\n"
                                       "importance\t72\t95.2\n"
                                       "gates\t72\t95.0\n"
                                       "importance\t36\t94.4\n"
                                       "gates\t36\t93.0\n"
                                       "importance\t18\t80.0\n");
  const std::string png = tmp / "curve.png";
  REQUIRE(run("'" + table + "' --x kept --y accuracy --series method --title t --out '" + png + "'") == 0);
  CHECK(png_size(png) == std::pair{900, 600});
  // the frame the command draws: the same plot built here
  LinePlot plot{"t", "kept", "accuracy", {{"importance", {72, 36, 18}, {95.2, 94.4, 80.0}, {}},
                                          {"gates", {72, 36}, {95.0, 93.0}, {}}}};
  plot.pad_y = true;
  const LinePlotFrame f = line_plot_frame(plot);
  Image img(png);
  const Color tab_blue = {31, 119, 180}, tab_orange = {255, 127, 14};
  CHECK_COLOR(img.at(int(f.px(18)), int(f.py(80.0))), tab_blue);    // importance, first series
  CHECK_COLOR(img.at(int(f.px(36)), int(f.py(93.0))), tab_orange);  // gates

  CHECK(run("'" + table + "' --x kept --y nothing --out '" + png + "'") == 2 << 8);
  const std::string bad = write_file(tmp / "bad.tsv", "kept\taccuracy\n1\t2\n3\tx\n");
  CHECK(run("'" + bad + "' --x kept --y accuracy --out '" + png + "'") == 2 << 8);
  const std::string ragged = write_file(tmp / "ragged.tsv", "kept\taccuracy\n1\n");
  CHECK(run("'" + ragged + "' --x kept --y accuracy --out '" + png + "'") == 2 << 8);
  CHECK(run("'" + std::string(tmp / "none.tsv") + "' --x kept --y accuracy --out '" + png + "'") != 0);
  const std::string out = tmp / "msg.txt";
  std::system(("'" + std::string(build) + "/headroom' plot '" + bad +
               "' --x kept --y accuracy --out '" + png + "' 2>'" + out + "'")
                  .c_str());
  CHECK(read_file_bytes(out).find("bad.tsv:3 column accuracy: 'x' is not a number") != std::string::npos);
}
