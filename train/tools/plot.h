// PNG figures for training reports, drawn with cairo: line plots (metrics against head counts, training curves),
// grids of attention maps (layers x heads), tables of per-head values such as gate open probabilities, and values of
// many rows over time (each head's gate across training). Each figure is written to a file (write_*_png) or returned
// as the PNG's bytes (*_png, for pages that inline their images). Every function throws hr::Error naming the path
// (or the figure's title) when there is nothing to draw or the file cannot be written.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hr {

// ---- colours

// The viridis colormap (perceptually uniform, colour-blind safe) at t in [0, 1] (clamped), as 8-bit RGB:
// linear interpolation between its 11 anchors, so viridis(0) = #440154 and viridis(1) = #fde725.
std::array<uint8_t, 3> viridis(double t);

// The fill of panels and cells that are marked (gated off / pruned): a light grey, 8-bit RGB.
constexpr std::array<uint8_t, 3> kMarkedGrey = {210, 210, 210};

// ---- line plots

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> y_err;  // empty, or one half-width per point: a bar from y - e to y + e
  bool markers = true;        // false: the line alone (training curves of many points)
  int color = -1;             // index into the series colours; -1: the series' own index
  double line_width = 2;      // pixels
  double opacity = 1;         // below 1: a faint line, e.g. raw values under their smoothed curve
  bool in_legend = true;
};

constexpr int kLinePlotWidth = 900, kLinePlotHeight = 600, kLinePlotLegendWidth = 200;

struct LinePlot {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  bool log2_x = false;   // x axis in powers of two (head counts 1, 2, 4, 8, 16); x values must then be > 0
  bool log10_y = false;  // y axis in powers of ten (perplexity); y values must then be > 0
  int width = kLinePlotWidth, height = kLinePlotHeight;
  int legend_width = kLinePlotLegendWidth;  // the band right of the plot that holds the legend; 0: no legend
  bool pad_y = false;  // room of 4% of the data's range above and below it (not across 0), so that no line runs
                       // along the frame (a constant learning rate on a tick)
};

// Where a line plot's data lands: the plot area in pixels, the axis ranges (in log2(x) when log2_x, log10(y) when
// log10_y) and the ticks.
struct LinePlotFrame {
  double left, top, right, bottom;
  double x_lo, x_hi, y_lo, y_hi;
  std::vector<double> x_ticks, y_ticks;  // in axis units (exponents when log2_x / log10_y)
  bool log2_x = false, log10_y = false;
  double px(double x) const;  // data x -> pixel column
  double py(double y) const;  // data y -> pixel row
};

// Tick values covering [lo, hi] at a step of 1, 2, 2.5 or 5 times a power of ten, about `target` intervals; the
// first tick is <= lo and the last >= hi. lo == hi is widened first.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

// The frame write_line_plot_png uses: the axes span the nice ticks around all finite points and error bars.
LinePlotFrame line_plot_frame(const LinePlot& plot);

// A width x height PNG: title, axis labels, grid lines at the ticks, one coloured line with markers (and error bars)
// per series, and a legend in the band to the right. Non-finite points are skipped (breaking the line).
void write_line_plot_png(const std::string& path, const LinePlot& plot);
std::string line_plot_png(const LinePlot& plot);  // the same PNG's bytes

// ---- grids of matrices (attention maps)

constexpr int kGridMaxSide = 4000, kGridMaxCell = 48, kGridMinLabelCell = 10;

struct HeatmapPanel {
  std::vector<float> values;  // (rows, cols) row-major as given in HeatmapGrid; may be empty when marked
  bool marked = false;        // gated off / pruned: drawn kMarkedGrey, crossed out, with mark_label
  std::string mark_label;     // e.g. "pruned"; "off" when empty
};

struct HeatmapGrid {
  std::string title;
  int64_t grid_rows = 0, grid_cols = 0;             // panels, e.g. layers x heads
  int64_t rows = 0, cols = 0;                       // each panel's matrix, e.g. query x key tokens
  std::vector<HeatmapPanel> panels;                 // grid_rows * grid_cols, row-major
  std::vector<std::string> row_titles, col_titles;  // one per grid row ("layer 3") / column ("head 2"), or empty
  std::vector<std::string> y_labels, x_labels;      // token labels along each panel's rows / columns, or empty
  bool auto_scale = false;  // false: colours span [0, 1] (values clamped); true: min..max over unmarked panels
  int max_side = kGridMaxSide;  // the size rule's bound (below), smaller for a page that shows the image
};

// The size rule of a heatmap grid image. With M = kGridMargin etc. and L = kGridLabelBand when labels are shown
// (0 otherwise):
//   fixed_w = 2M + kGridRowTitleWidth + kGridColorBarWidth + (grid_cols - 1) kGridGap + grid_cols L
//   fixed_h = 2M + kGridTitleHeight + kGridColTitleHeight + (grid_rows - 1) kGridGap + grid_rows L
//   cell    = clamp(min((S - fixed_w) / (grid_cols cols), (S - fixed_h) / (grid_rows rows)), 1, kGridMaxCell)
//             (integer division; S = the grid's max_side, kGridMaxSide unless set)
//   width   = fixed_w + grid_cols cols cell,  height = fixed_h + grid_rows rows cell
// Labels are shown when both label lists are given and the cell computed with L is at least kGridMinLabelCell.
// So the image is at most S a side unless even 1-pixel cells do not fit.
constexpr int kGridMargin = 16, kGridTitleHeight = 36, kGridColTitleHeight = 24, kGridRowTitleWidth = 90;
constexpr int kGridColorBarWidth = 90, kGridGap = 14, kGridLabelBand = 80;

struct HeatmapGridLayout {
  int width = 0, height = 0;
  int cell = 0;              // pixels per matrix cell (square)
  bool show_labels = false;  // token labels drawn
  std::vector<int> panel_x;  // left pixel of each grid column's matrices
  std::vector<int> panel_y;  // top pixel of each grid row's matrices
};

// The layout write_heatmap_grid_png draws (checks the grid like it does).
HeatmapGridLayout heatmap_grid_layout(const HeatmapGrid& grid);

// The grid of panels: matrix cells coloured with viridis, row and column titles, token labels (rotated along x)
// when the cells are big enough, marked panels greyed and crossed out, and a colour bar.
void write_heatmap_grid_png(const std::string& path, const HeatmapGrid& grid);
std::string heatmap_grid_png(const HeatmapGrid& grid);  // the same PNG's bytes

// ---- a table of values (e.g. gate open probability per layer x head)

struct ValueHeatmap {
  std::string title;
  int64_t rows = 0, cols = 0;
  std::vector<float> values;                        // (rows, cols) row-major, printed in each cell
  std::vector<std::string> row_labels, col_labels;  // one per row / column, or empty
  std::vector<bool> marked;                         // empty or rows * cols: cells drawn kMarkedGrey and struck out
  float lo = 0, hi = 1;                             // colour range; values outside are clamped
};

// Size rule: width = 2 kGridMargin + kTableRowLabelWidth + cols kTableCellWidth + kGridColorBarWidth,
// height = 2 kGridMargin + kGridTitleHeight + kGridColTitleHeight + rows kTableCellHeight.
constexpr int kTableCellWidth = 64, kTableCellHeight = 34, kTableRowLabelWidth = 90;

struct ValueHeatmapLayout {
  int width = 0, height = 0;
  int x0 = 0, y0 = 0;  // top-left pixel of cell (0, 0)
};

ValueHeatmapLayout value_heatmap_layout(const ValueHeatmap& table);

void write_value_heatmap_png(const std::string& path, const ValueHeatmap& table);
std::string value_heatmap_png(const ValueHeatmap& table);  // the same PNG's bytes

// ---- many rows of values over time (e.g. each head's gate open probability at every evaluation)

struct TimeHeatmap {
  std::string title, x_label;
  std::vector<double> x;                   // the columns' x values (steps), increasing; a column spans from the
                                           // midpoint with its left neighbour to the midpoint with its right one
  std::vector<std::string> group_labels;   // one per group of rows ("layer 2"), drawn left of the group
  std::vector<std::vector<std::string>> row_labels;  // per group, one per row ("h0"); drawn when rows are tall enough
  std::vector<std::vector<std::vector<float>>> values;  // [group][row][column]; NaN: no value (drawn white)
  float lo = 0, hi = 1;                    // colour range; values outside are clamped
};

// Size rule: width kTimeHeatmapWidth; each row is clamp(kTimeHeatmapRowsHeight / rows, 3, 22) pixels (integer),
// groups kGridGap apart; the height adds kGridMargin twice, kGridTitleHeight and kTimeHeatmapAxisHeight.
constexpr int kTimeHeatmapWidth = 900, kTimeHeatmapRowsHeight = 420, kTimeHeatmapAxisHeight = 56;
constexpr int kTimeHeatmapLabelWidth = 120;  // group and row labels, left of the cells

struct TimeHeatmapLayout {
  int width = 0, height = 0;
  int left = 0, right = 0;  // the cells' pixel columns [left, right)
  int row_height = 0;
  std::vector<int> group_y;  // top pixel of each group's first row
  bool row_labels = false;   // rows tall enough for their labels
};

TimeHeatmapLayout time_heatmap_layout(const TimeHeatmap& map);
std::string time_heatmap_png(const TimeHeatmap& map);

}  // namespace hr
