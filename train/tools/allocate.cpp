#include "train/tools/allocate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "framework/atomic_file.h"
#include "framework/bounded_json.h"
#include "kernels/base/error.h"
#include "models/head_pruning.h"
#include "train/tools/plot.h"
#include "train/tools/run_report.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

// One layer group of CONFIG's model.layers, as allocate widens it.
struct Group {
  int64_t repeat = 1, heads = 0, head_dim = 0;
};

// The layer groups, refusing those whose heads gates cannot size: another layer type, a layer written by `prune`
// (original_heads) and residual logits (pruning keeps every head of the layers they link).
std::vector<Group> read_groups(const Config& model, const std::string& config_path) {
  std::vector<Group> out;
  const std::vector<Config> groups = model.child("layers").items();
  for (size_t g = 0; g < groups.size(); ++g) {
    const Config& c = groups[g];
    const std::string where = config_path + ": model.layers." + std::to_string(g);
    const std::string type = c.get<std::string>("type", "encoder");
    if (type != "encoder")
      throw ConfigError("allocate: " + where + " is a '" + type + "' layer; only encoder layers can be widened");
    if (!c.has("attention")) throw ConfigError("allocate: " + where + " has no attention block to widen");
    const Config a = c.child("attention");
    if (a.has("original_heads") || a.get<bool>("pruned", false))
      throw ConfigError("allocate: " + where + ".attention was written by `headroom prune` (original_heads); "
                        "allocate needs a config to train from scratch");
    if (a.get<std::string>("cross_layer", "none") != "none")
      throw ConfigError("allocate: " + where + ".attention.cross_layer: gates cannot size layers linked by "
                        "residual logits (pruning keeps all their heads)");
    out.push_back({c.get_positive("repeat", 1), a.get_positive("heads"), a.get_positive("head_dim")});
  }
  return out;
}

std::string layer_key(size_t g, const std::string& key) {
  return "model.layers." + std::to_string(g) + ".attention." + key;
}

std::string heads_text(const std::vector<int64_t>& heads) {
  std::string s;
  for (int64_t h : heads) {
    if (!s.empty()) s += '+';
    s += std::to_string(h);
  }
  return s;
}

// OUT/allocate.json: what the directory was made from. Another config or search setting there is a usage error
// (its runs would be mixed with this one's); seeds and baselines may change (more runs, the same search).
void check_or_write_settings(const std::string& dir, const nlohmann::json& settings) {
  const std::string path = dir + "/allocate.json";
  if (fs::exists(path)) {
    const nlohmann::json old = read_json_file(path, 64 << 20, "settings file");
    for (const auto& [key, value] : settings.items())
      if (!old.contains(key) || old[key] != value)
        throw UsageError("allocate: " + dir + " holds an allocation made with another " + key + " (" + path +
                         "); choose another --out");
    return;
  }
  write_text_atomically(path, settings.dump(2) + "\n");
}

nlohmann::json to_json(const AllocateResult& r) {
  nlohmann::json j = to_json(static_cast<const RunMeasurement&>(r));
  j["name"] = r.name, j["heads"] = r.heads, j["seed"] = r.seed, j["flops_per_token"] = r.flops_per_token;
  return j;
}

AllocateResult allocate_result_from_json(const nlohmann::json& j) {
  AllocateResult r;
  static_cast<RunMeasurement&>(r) = measurement_from_json(j);
  r.name = j.at("name"), r.heads = j.at("heads").get<std::vector<int64_t>>(), r.seed = j.at("seed");
  r.flops_per_token = j.at("flops_per_token");
  return r;
}

// OUT/runs/<name>-s<seed>: one compare run
std::string run_dir(const std::string& dir, const std::string& name, int64_t seed) {
  return dir + "/runs/" + name + "-s" + std::to_string(seed);
}

// A model of the compare phase: trained from `config` with `overrides` (plus the seed).
struct CompareModel {
  std::string name, config;
  std::vector<std::string> overrides;
};

AllocateResult train_and_measure(const std::string& dir, const CompareModel& m, int64_t seed) {
  const std::string run = run_dir(dir, m.name, seed);
  const std::string result_path = run + "/result.json";
  if (fs::exists(result_path)) {
    std::cout << "allocate: reusing " << run << "\n";
    return allocate_result_from_json(read_json_file(result_path, 64 << 20, "result file"));
  }
  std::vector<std::string> overrides = m.overrides;
  overrides.push_back("train.seed=" + std::to_string(seed));
  train_or_resume("allocate", m.name + ", seed " + std::to_string(seed), run, m.config, overrides);
  LoadedRun loaded = load_run(run, "best");
  AllocateResult r;
  static_cast<RunMeasurement&>(r) = measure_run(loaded);
  r.name = m.name;
  r.seed = seed;
  for (const LayerStats& s : loaded.model->layer_stats(loaded.model->max_len())) {
    r.heads.push_back(s.heads);
    r.flops_per_token += s.attention_flops + s.ffn_flops;
  }
  write_text_atomically(result_path, to_json(r).dump(2) + "\n");
  return r;
}

}  // namespace

int64_t matched_head_dim(const std::vector<int64_t>& heads, int64_t width) {
  int64_t total = 0;
  for (int64_t h : heads) total += h;
  HR_CHECK(total > 0 && width > 0, "matched_head_dim: needs heads and a positive width");
  // round(width / total), and the neighbour whose width is closer when the rounding is not exact
  const int64_t lo = std::max<int64_t>(1, width / total), hi = lo + 1;
  return std::llabs(width - lo * total) <= std::llabs(hi * total - width) ? lo : hi;
}

void write_allocate_report(const std::string& dir, const std::vector<AllocateResult>& results) {
  HR_CHECK(!results.empty(), "allocate: no finished runs to report");
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunMeasurement*>> by_name;
  std::map<std::string, const AllocateResult*> first;
  for (const auto& r : results) {
    if (!by_name.count(r.name)) order.push_back(r.name), first[r.name] = &r;
    by_name[r.name].push_back(&r);
  }
  const std::string metric = results[0].metric;
  std::ofstream csv(dir + "/results.csv");
  csv << "model,heads,parameters,flops_per_token,seeds," << metric << "_mean," << metric
      << "_sd,train_ms_per_step,latency_b1_ms,latency_b32_ms\n";
  std::ofstream md(dir + "/results.md");
  md << "| model | heads per layer | parameters | FLOPs per token | " << metric
     << " (mean ± sd, seeds) | train step ms | latency b1 ms | latency b32 ms | reports |\n"
     << "|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  LinePlot plot{metric + " vs parameters (mean ± sd over seeds)", "parameters", metric, {}, false};
  for (const std::string& name : order) {
    const AllocateResult& r = *first[name];
    const SeedSummary s = summarize_seeds(by_name[name]);
    csv << name << "," << heads_text(r.heads) << "," << r.parameters << "," << r.flops_per_token << "," << s.seeds
        << "," << s.value.mean << "," << s.value.sd << "," << s.step_ms << "," << s.latency_b1_ms << ","
        << s.latency_b32_ms << "\n";
    char line[512];
    std::snprintf(line, sizeof line, "| %s | %s | %lld | %.0f | %.4f ± %.4f (%zu) | %.1f | %.2f | %.1f |",
                  name.c_str(), heads_text(r.heads).c_str(), static_cast<long long>(r.parameters), r.flops_per_token,
                  s.value.mean, s.value.sd, s.seeds, s.step_ms, s.latency_b1_ms, s.latency_b32_ms);
    std::string links;  // each seed's run report
    for (const AllocateResult& other : results) {
      if (other.name != name) continue;
      const std::string l = report_link(dir, run_dir(dir, name, other.seed), "seed " + std::to_string(other.seed));
      if (!l.empty()) links += (links.empty() ? "" : ", ") + l;
    }
    md << line << " " << links << " |\n";
    plot.series.push_back({name, {static_cast<double>(r.parameters)}, {s.value.mean}, {s.value.sd}});
  }
  if (fs::exists(dir + "/report.html")) md << "\nAll runs compared: [report.html](report.html)\n";
  write_line_plot_png(dir + "/metric_vs_parameters.png", plot);
}

namespace {

void check_allocate_options(const AllocateArgs& args) {
  if (args.seeds < 1) throw UsageError("allocate: --seeds must be at least 1");
  if (args.wide_heads < 1) throw UsageError("allocate: --wide-heads must be at least 1");
  if (args.match != "params" && args.match != "layer" && args.match != "none")
    throw UsageError("allocate: --match must be params, layer or none");
  if (args.search_from != "dense" && args.search_from != "scratch")
    throw UsageError("allocate: --search-from must be dense or scratch");
}

// The search model must be at least as wide as CONFIG, and each baseline's heads must divide d_model.
void check_widths(const AllocateArgs& args, const std::vector<Group>& groups, int64_t d_model) {
  for (size_t g = 0; g < groups.size(); ++g)
    if (args.allocation.empty() && groups[g].heads > args.wide_heads)
      throw UsageError("allocate: --wide-heads " + std::to_string(args.wide_heads) + " is below the " +
                       std::to_string(groups[g].heads) + " heads of " + args.config + ": model.layers." +
                       std::to_string(g) + " (the search model must be at least as wide)");
  for (int64_t b : args.baselines)
    if (b < 1 || d_model % b != 0)
      throw UsageError("allocate: --baselines " + std::to_string(b) + ": head counts must divide d_model " +
                       std::to_string(d_model) + " (head_dim = d_model / heads)");
}

// CONFIG's layers one by one: heads, head_dim, and the attention width of them all.
struct UniformLayers {
  std::vector<int64_t> heads, head_dim;
  int64_t width = 0;
};

UniformLayers uniform_layers(const std::vector<Group>& groups) {
  UniformLayers u;
  for (const Group& g : groups)
    for (int64_t r = 0; r < g.repeat; ++r) {
      u.heads.push_back(g.heads), u.head_dim.push_back(g.head_dim);
      u.width += g.heads * g.head_dim;
    }
  return u;
}

// What each layer keeps: from the search (or --allocation), with what the search saw, per layer.
struct Allocation {
  std::vector<int64_t> kept, searched, search_head_dim;
  std::vector<std::string> open, notes;
};

// Trains the search model (after the dense one with --search-from dense) unless OUT/allocation.json says it is done.
void train_search_model(const AllocateArgs& args, const std::string& dir, const std::vector<Group>& groups) {
  const std::string search = dir + "/search", dense = dir + "/search-dense";
  if (fs::exists(dir + "/allocation.json")) {
    std::cout << "allocate: reusing " << search << "\n";
    return;
  }
  std::vector<std::string> wide = args.overrides;
  for (size_t g = 0; g < groups.size(); ++g) {
    wide.push_back(layer_key(g, "heads=") + std::to_string(args.wide_heads));
    if (args.wide_head_dim > 0) wide.push_back(layer_key(g, "head_dim=") + std::to_string(args.wide_head_dim));
  }
  wide.push_back("train.seed=0");
  std::vector<std::string> gated = wide;
  for (size_t g = 0; g < groups.size(); ++g) {
    gated.push_back(layer_key(g, "gates.type=l0"));
    if (args.l0_lambda >= 0) {
      std::ostringstream lambda;  // all digits: std::to_string would write 1e-7 as 0.000000
      lambda << std::setprecision(9) << args.l0_lambda;
      gated.push_back(layer_key(g, "gates.lambda=") + lambda.str());
    }
  }
  const std::string what = std::to_string(args.wide_heads) + " heads a layer";
  if (args.search_from == "dense") {
    if (!fs::exists(search + "/checkpoint-last.safetensors"))  // a finished dense run resumes as a no-op
      train_or_resume("allocate", "the wide model without gates (" + what + ")", dense, args.config, wide);
    gated.push_back("train.init_from=" + dense + "/checkpoint-best.safetensors");
  }
  train_or_resume("allocate", "the search model (" + what + ", gated)", search, args.config, gated);
}

// Search (without --allocation): every layer wide and gated, seed 0; each layer keeps the heads its gates leave open
// (prune's rule), at least one. The last checkpoint, not the best: the allocation is where the penalty took the
// gates, and the best eval score tends to come before they close. With --search-from dense (the default) the gates
// start from the wide model trained without them (OUT/search-dense), as Voita et al. (2019) prune a trained model:
// from scratch, on a task that sits at chance for a while before it learns (the recall testbed), the penalty closes
// every gate before any head has shown its use.
Allocation allocate_heads(const AllocateArgs& args, const std::string& dir, const std::vector<Group>& groups,
                          const UniformLayers& u) {
  const size_t L = u.heads.size();
  Allocation a{args.allocation, u.heads, u.head_dim, std::vector<std::string>(L, "-"), {}};
  if (!args.allocation.empty()) return a;
  train_search_model(args, dir, groups);
  LoadedRun found = load_run(dir + "/search", "last", false);
  const PrunePlan plan = plan_pruning(*found.model, PruneOptions{}, nullptr);
  const std::vector<LayerStats> wide_stats = found.model->layer_stats(1);
  HR_CHECK(plan.keep.size() == L, "allocate: the search model's layers do not match " + args.config);
  a.kept.resize(L);
  for (size_t l = 0; l < L; ++l) {
    a.kept[l] = std::max<int64_t>(1, static_cast<int64_t>(plan.keep[l].size()));
    a.searched[l] = plan.heads[l], a.open[l] = head_list(plan.keep[l]), a.search_head_dim[l] = wide_stats[l].head_dim;
    if (plan.keep[l].empty())
      a.notes.push_back("layer " + std::to_string(l) + ": every gate closed; it keeps one head");
  }
  a.notes.insert(a.notes.begin(), plan.notes.begin(), plan.notes.end());
  return a;
}

// Each layer's head_dim by --match: one for all layers that brings the attention width back to CONFIG's (params),
// each layer's own width (layer), or the search model's (none).
std::vector<int64_t> matched_head_dims(const AllocateArgs& args, const UniformLayers& u, const Allocation& a) {
  std::vector<int64_t> head_dim(u.heads.size());
  for (size_t l = 0; l < head_dim.size(); ++l) {
    const int64_t layer_width = u.heads[l] * u.head_dim[l];
    head_dim[l] = args.match == "params" ? matched_head_dim(a.kept, u.width)
                  : args.match == "layer" ? matched_head_dim({a.kept[l]}, layer_width)
                                          : a.search_head_dim[l];
  }
  return head_dim;
}

// OUT/allocated.yaml: CONFIG with one group a layer, its kept heads and head_dim, no gates. Returns its text.
std::string write_allocated_config(const RunConfig& base, const Config& model, const std::vector<int64_t>& kept,
                                   const std::vector<int64_t>& head_dim, const std::string& dir) {
  YAML::Node root = YAML::Load(base.root.dump());
  root["model"] = one_group_per_layer(model, [&](size_t l, YAML::Node& layer) {
    layer["attention"]["heads"] = kept[l];
    layer["attention"]["head_dim"] = head_dim[l];
    layer["attention"].remove("gates");
  });
  YAML::Emitter emit;
  emit << root;
  const std::string allocated_yaml = std::string(emit.c_str()) + "\n";
  write_text_atomically(dir + "/allocated.yaml", allocated_yaml);
  return allocated_yaml;
}

// The per-layer table (printed, and OUT/allocation.json): heads and parameters, uniform and allocated.
void report_allocation(const AllocateArgs& args, const std::string& dir, const Config& model,
                       const std::string& allocated_yaml, const UniformLayers& u, const Allocation& a,
                       const std::vector<int64_t>& head_dim) {
  // Per-layer parameters do not depend on what the data decides (vocabulary, labels): built of shapes with placeholder
  // dims, the layers are the runs' own; the whole models' parameters come with the compare runs.
  const ModelDims layer_dims{1, 2, 0};
  const auto uniform_model = build_model_shapes(model, layer_dims);
  const auto allocated_model =
      build_model_shapes(Config::parse(allocated_yaml, dir + "/allocated.yaml").child("model"), layer_dims);
  const std::vector<LayerStats> us = uniform_model->layer_stats(1), as = allocated_model->layer_stats(1);
  nlohmann::json layer_rows = nlohmann::json::array();
  if (args.allocation.empty())
    std::printf("allocate: heads the gates of %s keep (match %s)\n", (dir + "/search").c_str(), args.match.c_str());
  else
    std::printf("allocate: the heads of --allocation (match %s)\n", args.match.c_str());
  std::printf("%-6s %12s %8s %14s %14s %18s\n", "layer", "search heads", "open", "uniform", "allocated",
              "params uniform/alloc");
  int64_t up = 0, ap = 0;  // encoder layers
  for (size_t l = 0; l < u.heads.size(); ++l) {
    char uh[32], ah[32];
    std::snprintf(uh, sizeof uh, "%lldx%lld", static_cast<long long>(u.heads[l]),
                  static_cast<long long>(u.head_dim[l]));
    std::snprintf(ah, sizeof ah, "%lldx%lld", static_cast<long long>(a.kept[l]), static_cast<long long>(head_dim[l]));
    std::printf("%-6zu %12s %8s %14s %14s %9lld/%lld\n", l,
                args.allocation.empty() ? std::to_string(a.searched[l]).c_str() : "-", a.open[l].c_str(), uh, ah,
                static_cast<long long>(us[l].parameters), static_cast<long long>(as[l].parameters));
    layer_rows.push_back({{"heads", a.kept[l]}, {"head_dim", head_dim[l]}, {"parameters", as[l].parameters},
                          {"uniform_parameters", us[l].parameters}});
    if (args.allocation.empty())
      layer_rows.back()["search_heads"] = a.searched[l], layer_rows.back()["open"] = a.open[l];
    up += us[l].parameters, ap += as[l].parameters;
  }
  for (const auto& n : a.notes) std::printf("note: %s\n", n.c_str());
  std::printf("allocate: encoder layer parameters uniform %lld, allocated %lld (%+.2f%%); written to "
              "%s/allocated.yaml\n",
              static_cast<long long>(up), static_cast<long long>(ap), 100.0 * static_cast<double>(ap - up) / up,
              dir.c_str());
  write_text_atomically(dir + "/allocation.json", nlohmann::json{{"layers", layer_rows},
                                                                 {"match", args.match},
                                                                 {"layer_parameters_uniform", up},
                                                                 {"layer_parameters_allocated", ap},
                                                                 {"notes", a.notes}}
                                                  .dump(2) + "\n");
  std::fflush(stdout);
}

// Compare: allocated, uniform and the baselines over seeds, from scratch; then the runs' reports and the table.
void compare_models(const AllocateArgs& args, const std::string& dir, const std::vector<Group>& groups,
                    int64_t d_model) {
  std::vector<CompareModel> models = {{"allocated", dir + "/allocated.yaml", {}},
                                      {"uniform", args.config, args.overrides}};
  for (int64_t b : args.baselines) {
    CompareModel m{"heads" + std::to_string(b), args.config, args.overrides};
    for (size_t g = 0; g < groups.size(); ++g) {
      m.overrides.push_back(layer_key(g, "heads=") + std::to_string(b));
      m.overrides.push_back(layer_key(g, "head_dim=") + std::to_string(d_model / b));
    }
    models.push_back(m);
  }
  std::vector<AllocateResult> results;
  for (const CompareModel& m : models)
    for (int64_t seed = 0; seed < args.seeds; ++seed) results.push_back(train_and_measure(dir, m, seed));
  if (args.remeasure) {
    // timings taken while other work shared the machine are not comparable: take them all again, back to back
    for (AllocateResult& r : results) {
      const std::string run = run_dir(dir, r.name, r.seed);
      retime_run("allocate", run, r);
      write_text_atomically(run + "/result.json", to_json(r).dump(2) + "\n");
    }
  }
  std::vector<std::string> runs;
  for (const AllocateResult& r : results) runs.push_back(run_dir(dir, r.name, r.seed));
  write_run_reports("allocate", dir, runs);
  write_allocate_report(dir, results);
}

}  // namespace

int allocate_command(const AllocateArgs& args) {
  check_allocate_options(args);
  const RunConfig base = load_run_config(args.config, args.overrides);
  const Config model = base.root.child("model");
  const int64_t d_model = model.get_positive("d_model");
  const std::vector<Group> groups = read_groups(model, args.config);
  check_widths(args, groups, d_model);
  const UniformLayers u = uniform_layers(groups);
  if (!args.allocation.empty() && args.allocation.size() != u.heads.size())
    throw UsageError("allocate: --allocation gives " + std::to_string(args.allocation.size()) + " head counts; " +
                     args.config + " has " + std::to_string(u.heads.size()) + " layers (one count a layer)");
  for (int64_t h : args.allocation)
    if (h < 1) throw UsageError("allocate: --allocation: every layer needs at least one head");

  const std::string dir = args.out_dir.empty() ? "allocations/" + base.name : args.out_dir;
  fs::create_directories(dir);
  nlohmann::json settings = {{"config", base.root.dump()}, {"match", args.match}};
  if (args.allocation.empty())
    settings.update({{"wide_heads", args.wide_heads}, {"wide_head_dim", args.wide_head_dim},
                     {"l0_lambda", args.l0_lambda}, {"search_from", args.search_from}});
  else
    settings["allocation"] = args.allocation;
  check_or_write_settings(dir, settings);

  const Allocation a = allocate_heads(args, dir, groups, u);
  const std::vector<int64_t> head_dim = matched_head_dims(args, u, a);
  const std::string allocated_yaml = write_allocated_config(base, model, a.kept, head_dim, dir);
  report_allocation(args, dir, model, allocated_yaml, u, a, head_dim);
  compare_models(args, dir, groups, d_model);
  std::ifstream md(dir + "/results.md");
  std::cout << md.rdbuf() << "allocate: wrote " << dir << "/allocated.yaml, allocation.json, results.csv, "
            << "results.md, metric_vs_parameters.png\n";
  return 0;
}

}  // namespace hr
