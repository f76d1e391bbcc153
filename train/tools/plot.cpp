#include "train/tools/plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numbers>

#include "kernels/base/error.h"

namespace hr {
namespace {

// Cairo image surfaces are limited to 32767 pixels a side.
constexpr int kMaxSurfaceSide = 32767;

struct Rgb {
  double r, g, b;
};

constexpr Rgb kInk = {0.15, 0.15, 0.15};
constexpr Rgb kFaintInk = {0.45, 0.45, 0.45};
constexpr Rgb kGridLine = {0.88, 0.88, 0.88};

// Matplotlib's "tab10": distinct series colours.
constexpr Rgb kSeriesColors[] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
    {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
    {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};

// An RGB image surface with its drawing context, white to start with. `where` (the path, or the figure's title) names
// the figure in errors.
class Canvas {
 public:
  Canvas(const std::string& where, int width, int height) : where_(where) {
    if (width > kMaxSurfaceSide || height > kMaxSurfaceSide)
      throw Error("cannot plot " + where + ": the image would be " + std::to_string(width) + " x " +
                  std::to_string(height) + " pixels, more than " + std::to_string(kMaxSurfaceSide) + " a side");
    surface_.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
    cr_.reset(cairo_create(surface_.get()));
    if (cairo_status(cr_.get()) != CAIRO_STATUS_SUCCESS)
      throw Error("cannot plot " + where + ": " + cairo_status_to_string(cairo_status(cr_.get())));
    cairo_set_source_rgb(cr_.get(), 1, 1, 1);
    cairo_paint(cr_.get());
    cairo_select_font_face(cr_.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  }

  cairo_t* cr() { return cr_.get(); }

  // Fills whole pixels directly: exact colours and fast for the millions of cells of a big attention grid.
  void fill_pixels(int x, int y, int w, int h, std::array<uint8_t, 3> c) {
    cairo_surface_flush(surface_.get());
    unsigned char* data = cairo_image_surface_get_data(surface_.get());
    const int stride = cairo_image_surface_get_stride(surface_.get());
    const uint32_t pixel = 0xff000000u | uint32_t{c[0]} << 16 | uint32_t{c[1]} << 8 | c[2];
    for (int row = y; row < y + h; ++row) {
      uint32_t* line = reinterpret_cast<uint32_t*>(data + static_cast<ptrdiff_t>(row) * stride);
      std::fill(line + x, line + x + w, pixel);
    }
    cairo_surface_mark_dirty_rectangle(surface_.get(), x, y, w, h);
  }

  // The PNG file's bytes.
  std::string png() {
    cairo_surface_flush(surface_.get());
    std::string bytes;
    const auto append = [](void* out, const unsigned char* data, unsigned int n) {
      static_cast<std::string*>(out)->append(reinterpret_cast<const char*>(data), n);
      return CAIRO_STATUS_SUCCESS;
    };
    const cairo_status_t status = cairo_surface_write_to_png_stream(surface_.get(), append, &bytes);
    if (status != CAIRO_STATUS_SUCCESS)
      throw Error("cannot encode plot " + where_ + ": " + cairo_status_to_string(status));
    return bytes;
  }

  void save(const std::string& path) {
    cairo_surface_flush(surface_.get());
    cairo_status_t status = cairo_surface_write_to_png(surface_.get(), path.c_str());
    if (status != CAIRO_STATUS_SUCCESS)
      throw Error("cannot write plot " + path + ": " + cairo_status_to_string(status));
  }

 private:
  struct SurfaceFree {
    void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
  };
  struct ContextFree {
    void operator()(cairo_t* c) const { cairo_destroy(c); }
  };
  std::string where_;
  std::unique_ptr<cairo_surface_t, SurfaceFree> surface_;
  std::unique_ptr<cairo_t, ContextFree> cr_;
};

// A figure checked, laid out and drawn on a canvas of its layout's size: what every figure's PNG, written or
// returned, goes through. `where` (the path, or the figure's title) names it in errors.
template <class Figure, class Layout>
Canvas figure_canvas(const Figure& figure, const std::string& where,
                     void (*check)(const Figure&, const std::string&), Layout (*lay_out)(const Figure&),
                     void (*draw)(Canvas&, const Figure&, const Layout&)) {
  check(figure, where);
  const Layout l = lay_out(figure);
  Canvas canvas(where, l.width, l.height);
  draw(canvas, figure, l);
  return canvas;
}

void set_color(cairo_t* cr, Rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t ext;
  cairo_text_extents(cr, s.c_str(), &ext);
  return ext.x_advance;
}

// `s` shortened with "…" to at most max_width pixels in the current font.
std::string fit_text(cairo_t* cr, const std::string& s, double max_width) {
  if (text_width(cr, s) <= max_width) return s;
  std::string cut = s;
  while (!cut.empty()) {
    do cut.pop_back();  // drop whole UTF-8 characters: continuation bytes are 10xxxxxx
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xc0) == 0x80);
    if (text_width(cr, cut + "\u2026") <= max_width) return cut + "\u2026";
  }
  return "";
}

struct TextStyle {
  double size = 12;
  Rgb color = kInk;
  bool bold = false;
  double align_x = 0;      // 0 left, 0.5 centre, 1 right of the anchor
  double align_y = 0.5;    // 0 top, 0.5 middle, 1 bottom (of the font's cap height)
  double angle = 0;        // radians, counter-clockwise on screen
  double max_width = 1e9;  // longer text is shortened
};

void draw_text(cairo_t* cr, double x, double y, const std::string& s, const TextStyle& style) {
  if (s.empty()) return;
  cairo_save(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         style.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, style.size);
  const std::string text = fit_text(cr, s, style.max_width);
  const double cap_height = 0.72 * style.size;
  cairo_translate(cr, x, y);
  cairo_rotate(cr, -style.angle);
  cairo_move_to(cr, -style.align_x * text_width(cr, text), (1 - style.align_y) * cap_height);
  set_color(cr, style.color);
  cairo_show_text(cr, text.c_str());
  cairo_restore(cr);
}

// A tick label with as many decimals as the step between ticks needs; ticks 10^4 or more apart in thousands (20k)
// or millions (1.5M), so that the labels of a step or token axis fit beside the axis.
std::string tick_label(double v, double step) {
  if (step >= 1e4 - 1e-9) {
    const double unit = step >= 1e5 - 1e-9 ? 1e6 : 1e3;
    if (v == 0) return "0";
    return tick_label(v / unit, step / unit) + (unit == 1e6 ? "M" : "k");
  }
  int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (std::fabs(step / std::pow(10.0, -decimals) - std::round(step / std::pow(10.0, -decimals))) > 1e-6) ++decimals;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v == 0 ? 0.0 : v);
  return buf;
}

std::string power_of_two_label(double exponent) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", std::exp2(exponent));
  return buf;
}

// The colour bar: viridis from lo (bottom) to hi (top), with numbers at nice ticks.
void draw_color_bar(Canvas& canvas, int x, int y, int height, double lo, double hi) {
  constexpr int kBarWidth = 18;
  for (int row = 0; row < height; ++row)
    canvas.fill_pixels(x, y + row, kBarWidth, 1, viridis(1.0 - (row + 0.5) / height));
  cairo_t* cr = canvas.cr();
  set_color(cr, kFaintInk);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x - 0.5, y - 0.5, kBarWidth + 1, height + 1);
  cairo_stroke(cr);
  std::vector<double> ticks = nice_ticks(lo, hi, 4);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (double t : ticks) {
    if (t < lo - 1e-9 * step || t > hi + 1e-9 * step) continue;
    const double ty = y + height * (1 - (t - lo) / (hi - lo));
    cairo_move_to(cr, x + kBarWidth, ty);
    cairo_line_to(cr, x + kBarWidth + 4, ty);
    cairo_stroke(cr);
    draw_text(cr, x + kBarWidth + 7, ty, tick_label(t, step), {.size = 11, .max_width = 60});
  }
}

// Grey fill, a cross from corner to corner and a label: a panel or cell that is gated off or pruned.
void draw_marked(Canvas& canvas, int x, int y, int w, int h, const std::string& label, double font_size) {
  canvas.fill_pixels(x, y, w, h, kMarkedGrey);
  cairo_t* cr = canvas.cr();
  cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
  cairo_set_line_width(cr, 1.5);
  cairo_move_to(cr, x, y);
  cairo_line_to(cr, x + w, y + h);
  cairo_move_to(cr, x + w, y);
  cairo_line_to(cr, x, y + h);
  cairo_stroke(cr);
  if (!label.empty() && font_size >= 6)
    draw_text(cr, x + w / 2.0, y + h / 2.0, label,
              {.size = font_size, .color = kInk, .bold = true, .align_x = 0.5, .max_width = w - 4.0});
}

// The value range for colours: [0, 1], or min..max of the finite values (widened when all are equal).
std::pair<double, double> color_range(const std::vector<const std::vector<float>*>& all, bool auto_scale) {
  if (!auto_scale) return {0.0, 1.0};
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* values : all)
    for (float v : *values)
      if (std::isfinite(v)) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  if (lo > hi) return {0.0, 1.0};
  if (lo == hi) return {lo, lo + 1};
  return {lo, hi};
}

std::array<uint8_t, 3> cell_color(float v, double lo, double hi) {
  if (!std::isfinite(v)) return {255, 255, 255};
  return viridis((v - lo) / (hi - lo));
}

// ---- line plot helpers

double axis_x(const LinePlot& plot, double x) { return plot.log2_x ? std::log2(x) : x; }
double axis_y(const LinePlot& plot, double y) { return plot.log10_y ? std::log10(y) : y; }

void check_line_plot(const LinePlot& plot, const std::string& where) {
  if (plot.series.empty()) throw Error(where + ": nothing to plot: no series");
  if (plot.width < 300 || plot.height < 200 || plot.legend_width < 0 || plot.legend_width > plot.width - 200)
    throw Error(where + ": a line plot of " + std::to_string(plot.width) + " x " + std::to_string(plot.height) +
                " pixels with a legend band of " + std::to_string(plot.legend_width) + " has no room to draw in");
  bool any_point = false;
  for (const PlotSeries& s : plot.series) {
    if (s.x.size() != s.y.size())
      throw Error(where + ": series '" + s.name + "' has " + std::to_string(s.x.size()) + " x values but " +
                  std::to_string(s.y.size()) + " y values");
    if (!s.y_err.empty() && s.y_err.size() != s.y.size())
      throw Error(where + ": series '" + s.name + "' has " + std::to_string(s.y_err.size()) +
                  " error bars for " + std::to_string(s.y.size()) + " points");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (plot.log2_x && !(s.x[i] > 0))
        throw Error(where + ": series '" + s.name + "' has x = " + std::to_string(s.x[i]) +
                    " on a log2 x axis (x must be > 0)");
      if (plot.log10_y && std::isfinite(s.y[i]) && !(s.y[i] > 0))
        throw Error(where + ": series '" + s.name + "' has y = " + std::to_string(s.y[i]) +
                    " on a log10 y axis (y must be > 0)");
      any_point = any_point || (std::isfinite(s.x[i]) && std::isfinite(s.y[i]));
    }
  }
  if (!any_point) throw Error(where + ": nothing to plot: no finite points");
}

}  // namespace

std::array<uint8_t, 3> viridis(double t) {
  // Matplotlib's viridis at t = 0, 0.1, ..., 1.
  static constexpr uint8_t kAnchors[11][3] = {
      {0x44, 0x01, 0x54}, {0x48, 0x24, 0x75}, {0x41, 0x44, 0x87}, {0x35, 0x5f, 0x8d}, {0x2a, 0x78, 0x8e},
      {0x21, 0x91, 0x8c}, {0x22, 0xa8, 0x84}, {0x44, 0xbf, 0x70}, {0x7a, 0xd1, 0x51}, {0xbd, 0xdf, 0x26},
      {0xfd, 0xe7, 0x25},
  };
  if (!(t > 0)) t = 0;  // also NaN
  if (t > 1) t = 1;
  const double pos = t * 10;
  const int i = std::min(9, static_cast<int>(pos));
  const double f = pos - i;
  std::array<uint8_t, 3> c;
  for (int k = 0; k < 3; ++k)
    c[k] = static_cast<uint8_t>(std::lround(kAnchors[i][k] * (1 - f) + kAnchors[i + 1][k] * f));
  return c;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi - lo > 1e-12 * std::max(1.0, std::fabs(lo)))) {
    const double widen = lo != 0 ? std::fabs(lo) * 0.1 : 1.0;
    lo -= widen;
    hi += widen;
  }
  const double rough = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  const double f = rough / magnitude;
  const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * magnitude;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last + 0.5; ++k) ticks.push_back(std::fabs(k) < 0.5 ? 0.0 : k * step);
  return ticks;
}

double LinePlotFrame::px(double x) const {
  const double ax = log2_x ? std::log2(x) : x;
  return left + (ax - x_lo) / (x_hi - x_lo) * (right - left);
}

double LinePlotFrame::py(double y) const {
  const double ay = log10_y ? std::log10(y) : y;
  return bottom - (ay - y_lo) / (y_hi - y_lo) * (bottom - top);
}

LinePlotFrame line_plot_frame(const LinePlot& plot) {
  check_line_plot(plot, "line plot '" + plot.title + "'");
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const PlotSeries& s : plot.series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const double err = s.y_err.empty() || !std::isfinite(s.y_err[i]) ? 0 : std::fabs(s.y_err[i]);
      x_lo = std::min(x_lo, axis_x(plot, s.x[i]));
      x_hi = std::max(x_hi, axis_x(plot, s.x[i]));
      // a log axis shows an error bar's lower end only while it stays above 0
      y_lo = std::min(y_lo, axis_y(plot, plot.log10_y && s.y[i] - err <= 0 ? s.y[i] : s.y[i] - err));
      y_hi = std::max(y_hi, axis_y(plot, s.y[i] + err));
    }
  }
  if (plot.pad_y && !plot.log10_y && y_hi >= y_lo) {
    const double pad = 0.04 * std::max(y_hi - y_lo, 1e-12 * std::max(1.0, std::fabs(y_hi)));
    y_lo = y_lo >= 0 ? std::max(0.0, y_lo - pad) : y_lo - pad;
    y_hi = y_hi <= 0 ? std::min(0.0, y_hi + pad) : y_hi + pad;
  }
  LinePlotFrame frame;
  frame.left = 84;
  frame.top = 56;
  frame.right = plot.width - std::max(plot.legend_width, 24);
  frame.bottom = plot.height - 64;
  frame.log2_x = plot.log2_x;
  frame.log10_y = plot.log10_y;
  // about one x tick per 90 pixels, so that tick labels of six digits do not run into each other
  const int x_ticks = std::clamp(static_cast<int>((frame.right - frame.left) / 90), 2, 6);
  if (plot.log2_x) {
    // One tick per power of two, with half a step of room at both ends so markers are not cut by the frame.
    for (double e = std::floor(x_lo + 1e-9); e <= std::ceil(x_hi - 1e-9) + 1e-9; ++e) frame.x_ticks.push_back(e);
    frame.x_lo = frame.x_ticks.front() - 0.25;
    frame.x_hi = frame.x_ticks.back() + 0.25;
  } else {
    frame.x_ticks = nice_ticks(x_lo, x_hi, x_ticks);
    frame.x_lo = frame.x_ticks.front();
    frame.x_hi = frame.x_ticks.back();
  }
  const int y_ticks = std::clamp(static_cast<int>((frame.bottom - frame.top) / 60), 2, 6);
  if (plot.log10_y) {
    // whole decades; a range within one decade gets its ends widened to the decades around it
    for (double e = std::floor(y_lo + 1e-9); e <= std::ceil(y_hi - 1e-9) + 1e-9; ++e) frame.y_ticks.push_back(e);
    if (frame.y_ticks.size() < 2) frame.y_ticks.push_back(frame.y_ticks.back() + 1);
  } else {
    frame.y_ticks = nice_ticks(y_lo, y_hi, y_ticks);
  }
  frame.y_lo = frame.y_ticks.front();
  frame.y_hi = frame.y_ticks.back();
  return frame;
}

namespace {

Rgb series_color(const PlotSeries& s, size_t index) {
  const size_t c = s.color >= 0 ? static_cast<size_t>(s.color) : index;
  return kSeriesColors[c % std::size(kSeriesColors)];
}

void draw_marker(cairo_t* cr, int shape, double x, double y) {
  constexpr double r = 4.5;
  switch (shape % 4) {
    case 0: cairo_arc(cr, x, y, r, 0, 2 * std::numbers::pi); break;
    case 1: cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r); break;
    case 2:
      cairo_move_to(cr, x, y - 1.2 * r);
      cairo_line_to(cr, x + 1.2 * r, y + 0.8 * r);
      cairo_line_to(cr, x - 1.2 * r, y + 0.8 * r);
      cairo_close_path(cr);
      break;
    default:
      cairo_move_to(cr, x, y - 1.3 * r);
      cairo_line_to(cr, x + 1.3 * r, y);
      cairo_line_to(cr, x, y + 1.3 * r);
      cairo_line_to(cr, x - 1.3 * r, y);
      cairo_close_path(cr);
  }
  cairo_fill(cr);
}

// 10^e as a tick label: 0.01, 0.1, 1, 10, 100, 1000, then 1e4 ...
std::string power_of_ten_label(double exponent) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", std::pow(10.0, exponent));
  return buf;
}

void draw_axes(cairo_t* cr, const LinePlot& plot, const LinePlotFrame& f) {
  const double x_step = f.x_ticks.size() > 1 ? f.x_ticks[1] - f.x_ticks[0] : 1;
  const double y_step = f.y_ticks.size() > 1 ? f.y_ticks[1] - f.y_ticks[0] : 1;
  const double x_room = (f.right - f.left) / std::max<double>(1, static_cast<double>(f.x_ticks.size()) - 1) - 6;
  cairo_set_line_width(cr, 1);
  for (double t : f.x_ticks) {
    const double x = std::round(f.left + (t - f.x_lo) / (f.x_hi - f.x_lo) * (f.right - f.left)) + 0.5;
    set_color(cr, kGridLine);
    cairo_move_to(cr, x, f.top);
    cairo_line_to(cr, x, f.bottom);
    cairo_stroke(cr);
    set_color(cr, kInk);
    cairo_move_to(cr, x, f.bottom);
    cairo_line_to(cr, x, f.bottom + 5);
    cairo_stroke(cr);
    draw_text(cr, x, f.bottom + 9, plot.log2_x ? power_of_two_label(t) : tick_label(t, x_step),
              {.size = 12, .align_x = 0.5, .align_y = 0, .max_width = x_room});
  }
  for (double t : f.y_ticks) {
    const double y = std::round(f.bottom - (t - f.y_lo) / (f.y_hi - f.y_lo) * (f.bottom - f.top)) + 0.5;
    set_color(cr, kGridLine);
    cairo_move_to(cr, f.left, y);
    cairo_line_to(cr, f.right, y);
    cairo_stroke(cr);
    set_color(cr, kInk);
    cairo_move_to(cr, f.left - 5, y);
    cairo_line_to(cr, f.left, y);
    cairo_stroke(cr);
    draw_text(cr, f.left - 8, y, plot.log10_y ? power_of_ten_label(t) : tick_label(t, y_step),
              {.size = 12, .align_x = 1, .max_width = 50});
  }
  set_color(cr, kInk);
  cairo_rectangle(cr, f.left + 0.5, f.top + 0.5, f.right - f.left - 1, f.bottom - f.top - 1);
  cairo_stroke(cr);
  draw_text(cr, (f.left + f.right) / 2, plot.height - 18, plot.x_label,
            {.size = 14, .align_x = 0.5, .max_width = f.right - f.left});
  draw_text(cr, 18, (f.top + f.bottom) / 2, plot.y_label,
            {.size = 14, .align_x = 0.5, .angle = std::numbers::pi / 2, .max_width = f.bottom - f.top});
  draw_text(cr, plot.width / 2.0, 26, plot.title,
            {.size = 18, .bold = true, .align_x = 0.5, .max_width = plot.width - 40.0});
}

void draw_series(cairo_t* cr, const PlotSeries& s, int index, const LinePlotFrame& f) {
  const Rgb color = series_color(s, static_cast<size_t>(index));
  cairo_set_source_rgba(cr, color.r, color.g, color.b, s.opacity);
  cairo_set_line_width(cr, s.line_width);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  bool pen_down = false;  // a non-finite point breaks the line
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
      pen_down = false;
      continue;
    }
    if (pen_down) cairo_line_to(cr, f.px(s.x[i]), f.py(s.y[i]));
    else cairo_move_to(cr, f.px(s.x[i]), f.py(s.y[i]));
    pen_down = true;
  }
  cairo_stroke(cr);
  cairo_set_line_width(cr, 1.5);
  for (size_t i = 0; i < s.y_err.size(); ++i) {
    if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || !std::isfinite(s.y_err[i])) continue;
    const double x = f.px(s.x[i]), e = std::fabs(s.y_err[i]);
    const double low = f.log10_y && s.y[i] - e <= 0 ? f.bottom : f.py(s.y[i] - e);
    cairo_move_to(cr, x, low);
    cairo_line_to(cr, x, f.py(s.y[i] + e));
    cairo_move_to(cr, x - 5, low);
    cairo_line_to(cr, x + 5, low);
    cairo_move_to(cr, x - 5, f.py(s.y[i] + e));
    cairo_line_to(cr, x + 5, f.py(s.y[i] + e));
  }
  cairo_stroke(cr);
}

void draw_markers(cairo_t* cr, const PlotSeries& s, int index, const LinePlotFrame& f) {
  if (!s.markers) return;
  const Rgb color = series_color(s, static_cast<size_t>(index));
  cairo_set_source_rgba(cr, color.r, color.g, color.b, s.opacity);
  for (size_t i = 0; i < s.x.size(); ++i)
    if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
      draw_marker(cr, s.color >= 0 ? s.color : index, f.px(s.x[i]), f.py(s.y[i]));
}

void draw_legend(cairo_t* cr, const LinePlot& plot, const LinePlotFrame& f) {
  if (plot.legend_width <= 0) return;
  const double x = f.right + 16;
  double y = f.top + 12;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    if (!s.in_legend) continue;
    if (y > f.bottom) break;
    const Rgb c = series_color(s, i);
    cairo_set_source_rgba(cr, c.r, c.g, c.b, std::max(0.5, s.opacity));
    cairo_set_line_width(cr, std::max(2.0, s.line_width));
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + 28, y);
    cairo_stroke(cr);
    if (s.markers) draw_marker(cr, s.color >= 0 ? s.color : static_cast<int>(i), x + 14, y);
    draw_text(cr, x + 36, y, s.name, {.size = 13, .max_width = plot.width - x - 44});
    y += 24;
  }
}

void draw_line_plot(Canvas& canvas, const LinePlot& plot) {
  const LinePlotFrame frame = line_plot_frame(plot);
  cairo_t* cr = canvas.cr();
  draw_axes(cr, plot, frame);
  cairo_save(cr);
  cairo_rectangle(cr, frame.left, frame.top, frame.right - frame.left, frame.bottom - frame.top);
  cairo_clip(cr);
  for (size_t i = 0; i < plot.series.size(); ++i) draw_series(cr, plot.series[i], static_cast<int>(i), frame);
  cairo_restore(cr);
  // markers unclipped: a point on the frame (the last step, a maximum on a tick) shows whole
  for (size_t i = 0; i < plot.series.size(); ++i) draw_markers(cr, plot.series[i], static_cast<int>(i), frame);
  draw_legend(cr, plot, frame);
}

// The plot checked and drawn on a canvas of its size; `where` names it in errors.
Canvas line_plot_canvas(const LinePlot& plot, const std::string& where) {
  check_line_plot(plot, where);
  Canvas canvas(where, plot.width, plot.height);
  draw_line_plot(canvas, plot);
  return canvas;
}

}  // namespace

void write_line_plot_png(const std::string& path, const LinePlot& plot) { line_plot_canvas(plot, path).save(path); }

std::string line_plot_png(const LinePlot& plot) {
  return line_plot_canvas(plot, "line plot '" + plot.title + "'").png();
}

// ---- heatmap grid

namespace {

void check_grid(const HeatmapGrid& g, const std::string& where) {
  if (g.grid_rows <= 0 || g.grid_cols <= 0 || g.rows <= 0 || g.cols <= 0)
    throw Error(where + ": nothing to plot: the grid is " + std::to_string(g.grid_rows) + " x " +
                std::to_string(g.grid_cols) + " panels of " + std::to_string(g.rows) + " x " + std::to_string(g.cols));
  if (static_cast<int64_t>(g.panels.size()) != g.grid_rows * g.grid_cols)
    throw Error(where + ": " + std::to_string(g.panels.size()) + " panels for a " + std::to_string(g.grid_rows) +
                " x " + std::to_string(g.grid_cols) + " grid");
  for (size_t i = 0; i < g.panels.size(); ++i) {
    const auto n = static_cast<int64_t>(g.panels[i].values.size());
    if (n != g.rows * g.cols && !(g.panels[i].marked && n == 0))
      throw Error(where + ": panel " + std::to_string(i) + " has " + std::to_string(n) + " values, not " +
                  std::to_string(g.rows) + " x " + std::to_string(g.cols));
  }
  auto check_count = [&](const std::vector<std::string>& v, int64_t n, const char* what) {
    if (!v.empty() && static_cast<int64_t>(v.size()) != n)
      throw Error(where + ": " + std::to_string(v.size()) + " " + what + " for " + std::to_string(n));
  };
  check_count(g.row_titles, g.grid_rows, "row titles");
  check_count(g.col_titles, g.grid_cols, "column titles");
  check_count(g.y_labels, g.rows, "y labels");
  check_count(g.x_labels, g.cols, "x labels");
}

// The cell size for a grid given the width of the label bands (see the size rule in plot.h).
int64_t grid_cell(const HeatmapGrid& g, int64_t band, int64_t& fixed_w, int64_t& fixed_h) {
  fixed_w = 2 * kGridMargin + kGridRowTitleWidth + kGridColorBarWidth + (g.grid_cols - 1) * kGridGap +
            g.grid_cols * band;
  fixed_h = 2 * kGridMargin + kGridTitleHeight + kGridColTitleHeight + (g.grid_rows - 1) * kGridGap +
            g.grid_rows * band;
  const int64_t by_width = (g.max_side - fixed_w) / (g.grid_cols * g.cols);
  const int64_t by_height = (g.max_side - fixed_h) / (g.grid_rows * g.rows);
  return std::clamp<int64_t>(std::min(by_width, by_height), 1, kGridMaxCell);
}

HeatmapGridLayout grid_layout(const HeatmapGrid& g) {
  int64_t fixed_w = 0, fixed_h = 0;
  const bool labels_given = !g.x_labels.empty() && !g.y_labels.empty();
  int64_t band = labels_given ? kGridLabelBand : 0;
  int64_t cell = grid_cell(g, band, fixed_w, fixed_h);
  if (band && cell < kGridMinLabelCell) cell = grid_cell(g, band = 0, fixed_w, fixed_h);
  const int64_t width = fixed_w + g.grid_cols * g.cols * cell, height = fixed_h + g.grid_rows * g.rows * cell;
  HeatmapGridLayout layout;
  layout.width = static_cast<int>(std::min<int64_t>(width, std::numeric_limits<int>::max()));
  layout.height = static_cast<int>(std::min<int64_t>(height, std::numeric_limits<int>::max()));
  layout.cell = static_cast<int>(cell);
  layout.show_labels = band > 0;
  for (int64_t c = 0; c < g.grid_cols && width <= kMaxSurfaceSide; ++c)
    layout.panel_x.push_back(
        static_cast<int>(kGridMargin + kGridRowTitleWidth + band + c * (g.cols * cell + band + kGridGap)));
  for (int64_t r = 0; r < g.grid_rows && height <= kMaxSurfaceSide; ++r)
    layout.panel_y.push_back(static_cast<int>(kGridMargin + kGridTitleHeight + kGridColTitleHeight +
                                              r * (g.rows * cell + band + kGridGap)));
  return layout;
}

void draw_token_labels(cairo_t* cr, const HeatmapGrid& g, const HeatmapGridLayout& l, int x, int y) {
  const double size = std::min(14.0, 0.8 * l.cell);
  const double room = kGridLabelBand - 6;
  for (int64_t i = 0; i < g.rows; ++i)
    draw_text(cr, x - 4, y + (i + 0.5) * l.cell, g.y_labels[i], {.size = size, .align_x = 1, .max_width = room});
  const double below = y + static_cast<double>(g.rows * l.cell) + 4;
  for (int64_t j = 0; j < g.cols; ++j)
    draw_text(cr, x + (j + 0.5) * l.cell, below, g.x_labels[j],
              {.size = size, .align_x = 1, .angle = std::numbers::pi / 2, .max_width = room});
}

}  // namespace

HeatmapGridLayout heatmap_grid_layout(const HeatmapGrid& grid) {
  check_grid(grid, "heatmap grid '" + grid.title + "'");
  return grid_layout(grid);
}

namespace {

void draw_heatmap_grid(Canvas& canvas, const HeatmapGrid& g, const HeatmapGridLayout& l) {
  cairo_t* cr = canvas.cr();

  std::vector<const std::vector<float>*> shown;
  for (const HeatmapPanel& p : g.panels)
    if (!p.marked) shown.push_back(&p.values);
  const auto [lo, hi] = color_range(shown, g.auto_scale);

  const int panel_w = static_cast<int>(g.cols) * l.cell, panel_h = static_cast<int>(g.rows) * l.cell;
  draw_text(cr, l.width / 2.0, kGridMargin + kGridTitleHeight / 2.0, g.title,
            {.size = 18, .bold = true, .align_x = 0.5, .max_width = l.width - 2.0 * kGridMargin});
  for (int64_t c = 0; c < g.grid_cols && !g.col_titles.empty(); ++c)
    draw_text(cr, l.panel_x[c] + panel_w / 2.0, l.panel_y[0] - kGridColTitleHeight / 2.0, g.col_titles[c],
              {.size = 13, .bold = true, .align_x = 0.5, .max_width = panel_w + 0.0 + kGridGap});
  for (int64_t r = 0; r < g.grid_rows && !g.row_titles.empty(); ++r)
    draw_text(cr, kGridMargin, l.panel_y[r] + panel_h / 2.0, g.row_titles[r],
              {.size = 13, .bold = true, .max_width = kGridRowTitleWidth - 6.0});

  for (int64_t r = 0; r < g.grid_rows; ++r) {
    for (int64_t c = 0; c < g.grid_cols; ++c) {
      const HeatmapPanel& p = g.panels[r * g.grid_cols + c];
      const int x = l.panel_x[c], y = l.panel_y[r];
      if (p.marked) {
        draw_marked(canvas, x, y, panel_w, panel_h, p.mark_label.empty() ? "off" : p.mark_label,
                    std::min(16.0, panel_w / 5.0));
      } else {
        for (int64_t i = 0; i < g.rows; ++i)
          for (int64_t j = 0; j < g.cols; ++j)
            canvas.fill_pixels(x + static_cast<int>(j) * l.cell, y + static_cast<int>(i) * l.cell, l.cell, l.cell,
                               cell_color(p.values[i * g.cols + j], lo, hi));
      }
      set_color(cr, kFaintInk);
      cairo_set_line_width(cr, 1);
      cairo_rectangle(cr, x - 0.5, y - 0.5, panel_w + 1, panel_h + 1);
      cairo_stroke(cr);
      if (l.show_labels) draw_token_labels(cr, g, l, x, y);
    }
  }
  const int bar_top = l.panel_y[0];
  const int bar_height = std::max(1, std::min(320, l.height - bar_top - kGridMargin));
  draw_color_bar(canvas, l.width - kGridMargin - kGridColorBarWidth + 16, bar_top, bar_height, lo, hi);
}

Canvas heatmap_grid_canvas(const HeatmapGrid& g, const std::string& where) {
  return figure_canvas(g, where, check_grid, grid_layout, draw_heatmap_grid);
}

}  // namespace

void write_heatmap_grid_png(const std::string& path, const HeatmapGrid& g) { heatmap_grid_canvas(g, path).save(path); }

std::string heatmap_grid_png(const HeatmapGrid& g) {
  return heatmap_grid_canvas(g, "heatmap grid '" + g.title + "'").png();
}

// ---- value table

namespace {

void check_table(const ValueHeatmap& t, const std::string& where) {
  if (t.rows <= 0 || t.cols <= 0 || static_cast<int64_t>(t.values.size()) != t.rows * t.cols)
    throw Error(where + ": nothing to plot or wrong size: " + std::to_string(t.values.size()) + " values for " +
                std::to_string(t.rows) + " x " + std::to_string(t.cols));
  if (!t.marked.empty() && static_cast<int64_t>(t.marked.size()) != t.rows * t.cols)
    throw Error(where + ": " + std::to_string(t.marked.size()) + " marks for " + std::to_string(t.rows * t.cols) +
                " cells");
  if (!t.row_labels.empty() && static_cast<int64_t>(t.row_labels.size()) != t.rows)
    throw Error(where + ": " + std::to_string(t.row_labels.size()) + " row labels for " + std::to_string(t.rows));
  if (!t.col_labels.empty() && static_cast<int64_t>(t.col_labels.size()) != t.cols)
    throw Error(where + ": " + std::to_string(t.col_labels.size()) + " column labels for " + std::to_string(t.cols));
  if (!(t.hi > t.lo)) throw Error(where + ": colour range [" + std::to_string(t.lo) + ", " + std::to_string(t.hi) +
                                  "] is empty");
}

ValueHeatmapLayout table_layout(const ValueHeatmap& t) {
  ValueHeatmapLayout l;
  const int64_t width = 2 * kGridMargin + kTableRowLabelWidth + t.cols * kTableCellWidth + kGridColorBarWidth;
  const int64_t height = 2 * kGridMargin + kGridTitleHeight + kGridColTitleHeight + t.rows * kTableCellHeight;
  l.width = static_cast<int>(std::min<int64_t>(width, std::numeric_limits<int>::max()));
  l.height = static_cast<int>(std::min<int64_t>(height, std::numeric_limits<int>::max()));
  l.x0 = kGridMargin + kTableRowLabelWidth;
  l.y0 = kGridMargin + kGridTitleHeight + kGridColTitleHeight;
  return l;
}

}  // namespace

ValueHeatmapLayout value_heatmap_layout(const ValueHeatmap& table) {
  check_table(table, "value heatmap '" + table.title + "'");
  return table_layout(table);
}

namespace {

void draw_value_heatmap(Canvas& canvas, const ValueHeatmap& t, const ValueHeatmapLayout& l) {
  cairo_t* cr = canvas.cr();
  draw_text(cr, l.width / 2.0, kGridMargin + kGridTitleHeight / 2.0, t.title,
            {.size = 18, .bold = true, .align_x = 0.5, .max_width = l.width - 2.0 * kGridMargin});
  for (int64_t c = 0; c < t.cols && !t.col_labels.empty(); ++c)
    draw_text(cr, l.x0 + (c + 0.5) * kTableCellWidth, l.y0 - kGridColTitleHeight / 2.0, t.col_labels[c],
              {.size = 12, .bold = true, .align_x = 0.5, .max_width = kTableCellWidth - 4.0});
  for (int64_t r = 0; r < t.rows && !t.row_labels.empty(); ++r)
    draw_text(cr, l.x0 - 8, l.y0 + (r + 0.5) * kTableCellHeight, t.row_labels[r],
              {.size = 12, .bold = true, .align_x = 1, .max_width = kTableRowLabelWidth - 12.0});

  for (int64_t r = 0; r < t.rows; ++r) {
    for (int64_t c = 0; c < t.cols; ++c) {
      const float v = t.values[r * t.cols + c];
      const int x = l.x0 + static_cast<int>(c) * kTableCellWidth, y = l.y0 + static_cast<int>(r) * kTableCellHeight;
      const bool marked = !t.marked.empty() && t.marked[r * t.cols + c];
      const std::array<uint8_t, 3> fill = marked ? kMarkedGrey : cell_color(v, t.lo, t.hi);
      if (marked) draw_marked(canvas, x, y, kTableCellWidth, kTableCellHeight, "", 0);
      else canvas.fill_pixels(x, y, kTableCellWidth, kTableCellHeight, fill);
      // Dark text on light cells, white on dark ones (relative luminance of the fill).
      const double luminance = (0.2126 * fill[0] + 0.7152 * fill[1] + 0.0722 * fill[2]) / 255;
      char text[32];
      std::snprintf(text, sizeof text, "%.2f", v);
      draw_text(cr, x + kTableCellWidth / 2.0, y + kTableCellHeight / 2.0, std::isfinite(v) ? text : "–",
                {.size = 13, .color = luminance > 0.5 ? kInk : Rgb{1, 1, 1}, .align_x = 0.5,
                 .max_width = kTableCellWidth - 4.0});
    }
  }
  draw_color_bar(canvas, l.width - kGridMargin - kGridColorBarWidth + 16, l.y0,
                 std::min<int>(320, static_cast<int>(t.rows) * kTableCellHeight), t.lo, t.hi);
}

Canvas value_heatmap_canvas(const ValueHeatmap& t, const std::string& where) {
  return figure_canvas(t, where, check_table, table_layout, draw_value_heatmap);
}

}  // namespace

void write_value_heatmap_png(const std::string& path, const ValueHeatmap& t) {
  value_heatmap_canvas(t, path).save(path);
}

std::string value_heatmap_png(const ValueHeatmap& t) {
  return value_heatmap_canvas(t, "value heatmap '" + t.title + "'").png();
}

// ---- values over time

namespace {

void check_time_heatmap(const TimeHeatmap& m, const std::string& where) {
  if (m.x.empty() || m.values.empty())
    throw Error(where + ": nothing to plot: " + std::to_string(m.x.size()) + " columns, " +
                std::to_string(m.values.size()) + " groups of rows");
  for (size_t i = 1; i < m.x.size(); ++i)
    if (!(m.x[i] > m.x[i - 1])) throw Error(where + ": the x values must increase (column " + std::to_string(i) + ")");
  if (m.group_labels.size() != m.values.size() || m.row_labels.size() != m.values.size())
    throw Error(where + ": " + std::to_string(m.group_labels.size()) + " group labels and " +
                std::to_string(m.row_labels.size()) + " lists of row labels for " + std::to_string(m.values.size()) +
                " groups");
  for (size_t g = 0; g < m.values.size(); ++g) {
    if (m.values[g].empty() || m.row_labels[g].size() != m.values[g].size())
      throw Error(where + ": group " + std::to_string(g) + " has " + std::to_string(m.values[g].size()) +
                  " rows and " + std::to_string(m.row_labels[g].size()) + " row labels");
    for (const auto& row : m.values[g])
      if (row.size() != m.x.size())
        throw Error(where + ": a row of group " + std::to_string(g) + " has " + std::to_string(row.size()) +
                    " values for " + std::to_string(m.x.size()) + " columns");
  }
  if (!(m.hi > m.lo))
    throw Error(where + ": colour range [" + std::to_string(m.lo) + ", " + std::to_string(m.hi) + "] is empty");
}

TimeHeatmapLayout time_layout(const TimeHeatmap& m) {
  TimeHeatmapLayout l;
  size_t rows = 0;
  for (const auto& g : m.values) rows += g.size();
  l.row_height = std::clamp(kTimeHeatmapRowsHeight / static_cast<int>(std::min<size_t>(rows, 1 << 20)), 3, 22);
  l.row_labels = l.row_height >= 11;
  l.width = kTimeHeatmapWidth;
  l.left = kGridMargin + kTimeHeatmapLabelWidth;
  l.right = l.width - kGridMargin - kGridColorBarWidth;
  int y = kGridMargin + kGridTitleHeight;
  for (const auto& g : m.values) {
    l.group_y.push_back(y);
    y += static_cast<int>(g.size()) * l.row_height + kGridGap;
  }
  l.height = y - kGridGap + kTimeHeatmapAxisHeight + kGridMargin;
  return l;
}

// The pixel column where x lands: the columns' edges are the midpoints between their x values.
double time_column_edge(const TimeHeatmap& m, const TimeHeatmapLayout& l, size_t edge) {
  const size_t n = m.x.size();
  const double half_first = n > 1 ? (m.x[1] - m.x[0]) / 2 : 0.5;
  const double half_last = n > 1 ? (m.x[n - 1] - m.x[n - 2]) / 2 : 0.5;
  const double lo = m.x.front() - half_first, hi = m.x.back() + half_last;
  const double at = edge == 0 ? lo : edge == n ? hi : (m.x[edge - 1] + m.x[edge]) / 2;
  return l.left + (at - lo) / (hi - lo) * (l.right - l.left);
}

void draw_time_heatmap(Canvas& canvas, const TimeHeatmap& m, const TimeHeatmapLayout& l) {
  cairo_t* cr = canvas.cr();
  draw_text(cr, l.width / 2.0, kGridMargin + kGridTitleHeight / 2.0, m.title,
            {.size = 18, .bold = true, .align_x = 0.5, .max_width = l.width - 2.0 * kGridMargin});
  for (size_t g = 0; g < m.values.size(); ++g) {
    const int top = l.group_y[g], rows = static_cast<int>(m.values[g].size());
    for (int r = 0; r < rows; ++r) {
      const int y = top + r * l.row_height;
      for (size_t c = 0; c < m.x.size(); ++c) {
        const int x0 = static_cast<int>(std::lround(time_column_edge(m, l, c)));
        const int x1 = static_cast<int>(std::lround(time_column_edge(m, l, c + 1)));
        if (x1 > x0) canvas.fill_pixels(x0, y, x1 - x0, l.row_height, cell_color(m.values[g][r][c], m.lo, m.hi));
      }
      if (l.row_labels)
        draw_text(cr, l.left - 6, y + l.row_height / 2.0, m.row_labels[g][r],
                  {.size = std::min(12.0, l.row_height - 2.0), .color = kFaintInk, .align_x = 1, .max_width = 40});
    }
    set_color(cr, kFaintInk);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, l.left - 0.5, top - 0.5, l.right - l.left + 1, rows * l.row_height + 1);
    cairo_stroke(cr);
    draw_text(cr, kGridMargin, top + rows * l.row_height / 2.0, m.group_labels[g],
              {.size = 13, .bold = true, .max_width = kTimeHeatmapLabelWidth - (l.row_labels ? 50.0 : 8.0)});
  }
  // the x axis under the last group: ticks at nice values of x
  const int axis_y = l.group_y.back() + static_cast<int>(m.values.back().size()) * l.row_height;
  const double lo = m.x.front(), hi = m.x.back();
  const double x_lo = time_column_edge(m, l, 0), x_hi = time_column_edge(m, l, m.x.size());
  const double span_lo = lo - (m.x.size() > 1 ? (m.x[1] - m.x[0]) / 2 : 0.5);
  const double span_hi = hi + (m.x.size() > 1 ? (m.x.back() - m.x[m.x.size() - 2]) / 2 : 0.5);
  const std::vector<double> ticks = nice_ticks(span_lo, span_hi, 6);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  set_color(cr, kInk);
  for (double t : ticks) {
    if (t < span_lo || t > span_hi) continue;
    const double x = std::round(x_lo + (t - span_lo) / (span_hi - span_lo) * (x_hi - x_lo)) + 0.5;
    cairo_move_to(cr, x, axis_y);
    cairo_line_to(cr, x, axis_y + 5);
    cairo_stroke(cr);
    draw_text(cr, x, axis_y + 9, tick_label(t, step), {.size = 12, .align_x = 0.5, .align_y = 0});
  }
  draw_text(cr, (l.left + l.right) / 2.0, axis_y + kTimeHeatmapAxisHeight - 14, m.x_label,
            {.size = 14, .align_x = 0.5, .max_width = static_cast<double>(l.right - l.left)});
  const int bar_top = l.group_y.front();
  draw_color_bar(canvas, l.right + 16, bar_top, std::max(40, std::min(240, axis_y - bar_top)), m.lo, m.hi);
}

}  // namespace

TimeHeatmapLayout time_heatmap_layout(const TimeHeatmap& map) {
  check_time_heatmap(map, "time heatmap '" + map.title + "'");
  return time_layout(map);
}

std::string time_heatmap_png(const TimeHeatmap& map) {
  return figure_canvas(map, "time heatmap '" + map.title + "'", check_time_heatmap, time_layout, draw_time_heatmap)
      .png();
}

}  // namespace hr
