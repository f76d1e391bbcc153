// headroom plot TABLE.tsv --x COL --y COL [--series COL] --out FILE.png: two columns of a tab-separated table (a
// header line naming the columns, then one row a line) as lines, one per value of the series column. The experiment
// scripts write such tables for what is not a run's logged metric (scripts/prune-curve.sh: accuracy against the
// heads kept).
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "kernels/base/error.h"
#include "train/cli/command.h"
#include "train/tools/plot.h"

namespace hr {

namespace {

struct PlotArgs {
  std::string table, x, y, series, y_err, out, title, x_label, y_label;
  bool log2_x = false;
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
  return cells;
}

size_t column(const std::vector<std::string>& header, const std::string& name, const std::string& path) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  std::string have;
  for (const std::string& h : header) have += (have.empty() ? "" : ", ") + h;
  throw UsageError(path + ": no column '" + name + "' (the header has: " + have + ")");
}

double number(const std::string& cell, const std::string& where) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(cell, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != cell.size()) throw UsageError(where + ": '" + cell + "' is not a number");
  return v;
}

int plot_command(const PlotArgs& a) {
  std::ifstream f(a.table);
  if (!f) throw UsageError(a.table + ": cannot read");
  std::string line;
  if (!std::getline(f, line)) throw UsageError(a.table + ": empty (a header line naming the columns comes first)");
  const std::vector<std::string> header = split_tabs(line);
  const size_t xi = column(header, a.x, a.table), yi = column(header, a.y, a.table);
  const size_t si = a.series.empty() ? header.size() : column(header, a.series, a.table);
  const size_t ei = a.y_err.empty() ? header.size() : column(header, a.y_err, a.table);
  std::map<std::string, PlotSeries> by_name;  // series in the order of their names
  std::vector<std::string> order;             // ... and of their first rows
  for (int64_t line_no = 2; std::getline(f, line); ++line_no) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_tabs(line);
    const std::string where = a.table + ":" + std::to_string(line_no);
    if (cells.size() != header.size())
      throw UsageError(where + ": " + std::to_string(cells.size()) + " cells, the header has " +
                       std::to_string(header.size()));
    const std::string name = si < header.size() ? cells[si] : a.y;
    if (!by_name.count(name)) order.push_back(name);
    PlotSeries& s = by_name[name];
    s.name = name;
    s.x.push_back(number(cells[xi], where + " column " + a.x));
    s.y.push_back(number(cells[yi], where + " column " + a.y));
    if (ei < header.size()) s.y_err.push_back(number(cells[ei], where + " column " + a.y_err));
  }
  if (order.empty()) throw UsageError(a.table + ": no rows under the header");
  LinePlot plot;
  plot.title = a.title.empty() ? a.y + " against " + a.x : a.title;
  plot.x_label = a.x_label.empty() ? a.x : a.x_label;
  plot.y_label = a.y_label.empty() ? a.y : a.y_label;
  plot.log2_x = a.log2_x;
  plot.pad_y = true;
  for (const std::string& name : order) plot.series.push_back(std::move(by_name[name]));
  write_line_plot_png(a.out, plot);
  std::cout << "wrote " << a.out << "\n";
  return 0;
}

}  // namespace

Command add_plot_command(CLI::App& app) {
  auto a = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand("plot", "plot two columns of a tab-separated table as lines, a line per series (PNG)");
  cmd->add_option("table", a->table, "the table: a header line naming the columns, then tab-separated rows")->required();
  cmd->add_option("--x", a->x, "the x column")->required();
  cmd->add_option("--y", a->y, "the y column")->required();
  cmd->add_option("--series", a->series, "the column whose values name the lines (default: one line)");
  cmd->add_option("--y-err", a->y_err, "a column of error-bar half-widths");
  cmd->add_option("--title", a->title, "plot title (default: Y against X)");
  cmd->add_option("--x-label", a->x_label, "x axis label (default: the column's name)");
  cmd->add_option("--y-label", a->y_label, "y axis label (default: the column's name)");
  cmd->add_flag("--log2-x", a->log2_x, "x axis in powers of two (x values > 0)");
  cmd->add_option("--out", a->out, "the PNG to write")->required();
  return {cmd, [a] { return plot_command(*a); }};
}

}  // namespace hr
