#include "train/tools/prune.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "models/encoder_layer.h"
#include "train/run/checkpoint.h"
#include "train/run/trainer.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

const MultiHeadAttention* attention_of(const EncoderModel& model, size_t i) {
  const auto* enc = dynamic_cast<const EncoderLayer*>(&model.layer(i));
  return enc ? &enc->attn : nullptr;
}

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// The next encoder layer after i, or -1.
int64_t next_attention_layer(const EncoderModel& model, size_t i) {
  for (size_t j = i + 1; j < model.num_layers(); ++j)
    if (attention_of(model, j)) return static_cast<int64_t>(j);
  return -1;
}

// Talking heads: one index h plays three roles, the input logits of q_h/k_h, the mixed logits/weights of head h, and
// the value head h the gate acts on. Removing h is exact only when its value output is zero (closed gate) and its
// logits and weights reach no kept head: talk_logits[h, K] = 0 and talk_weights[h, K] = 0. Grows `keep` to the
// smallest set closed under that rule.
std::vector<int64_t> talking_heads_closure(const MultiHeadAttention& a, std::vector<int64_t> keep) {
  const int64_t H = a.options().heads;
  const std::vector<float> tl = a.talk_logits->to_vector(), tw = a.talk_weights->to_vector();  // (H, H) [in, out]
  std::vector<bool> kept(static_cast<size_t>(H), false);
  for (int64_t h : keep) kept[static_cast<size_t>(h)] = true;
  for (bool grew = true; grew;) {
    grew = false;
    for (int64_t h = 0; h < H; ++h) {
      if (kept[static_cast<size_t>(h)]) continue;
      for (int64_t j = 0; j < H && !kept[static_cast<size_t>(h)]; ++j)
        if (kept[static_cast<size_t>(j)] && (tl[static_cast<size_t>(h * H + j)] != 0.f || tw[static_cast<size_t>(h * H + j)] != 0.f))
          kept[static_cast<size_t>(h)] = grew = true;
    }
  }
  keep.clear();
  for (int64_t h = 0; h < H; ++h)
    if (kept[static_cast<size_t>(h)]) keep.push_back(h);
  return keep;
}

// ---- host-side slicing of weights

// Rows [h*Dh, (h+1)*Dh) of a (H*Dh, C) matrix (C = 1 for a bias) for each kept head h.
std::vector<float> head_rows(const std::vector<float>& w, int64_t cols, int64_t Dh, const std::vector<int64_t>& keep) {
  std::vector<float> out;
  for (int64_t h : keep)
    out.insert(out.end(), w.begin() + h * Dh * cols, w.begin() + (h + 1) * Dh * cols);
  return out;
}

// Columns of the kept heads' blocks of a (D, H*Dh) matrix, each block times its head's factor.
std::vector<float> head_cols(const std::vector<float>& w, int64_t rows, int64_t H, int64_t Dh,
                             const std::vector<int64_t>& keep, const std::vector<float>& factor) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(rows * static_cast<int64_t>(keep.size()) * Dh));
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < keep.size(); ++k)
      for (int64_t d = 0; d < Dh; ++d) out.push_back(w[static_cast<size_t>(r * H * Dh + keep[k] * Dh + d)] * factor[k]);
  return out;
}

// m[rows, cols] of an (R, C) matrix.
std::vector<float> submatrix(const std::vector<float>& m, int64_t C, const std::vector<int64_t>& rows,
                             const std::vector<int64_t>& cols) {
  std::vector<float> out;
  for (int64_t r : rows)
    for (int64_t c : cols) out.push_back(m[static_cast<size_t>(r * C + c)]);
  return out;
}

std::vector<int64_t> all_heads(int64_t H) {
  std::vector<int64_t> v(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) v[static_cast<size_t>(h)] = h;
  return v;
}

// One layer group per layer: the source group without `repeat`, with its kept head count and no gates.
YAML::Node pruned_model_node(const Config& model_block, const EncoderModel& model, const PrunePlan& plan) {
  YAML::Node m = YAML::Load(model_block.dump());
  YAML::Node layers(YAML::NodeType::Sequence);
  size_t index = 0;
  for (const YAML::Node& group : m["layers"]) {
    const int64_t repeat = group["repeat"] ? group["repeat"].as<int64_t>() : 1;
    for (int64_t r = 0; r < repeat; ++r, ++index) {
      YAML::Node layer = YAML::Clone(group);
      layer.remove("repeat");
      if (plan.attention[index]) {
        layer["attention"]["heads"] = static_cast<int64_t>(plan.keep[index].size());
        layer["attention"]["pruned"] = true;
        layer["attention"].remove("gates");
      }
      layers.push_back(layer);
    }
  }
  HR_CHECK(index == model.num_layers(), "prune: the config's layer groups do not match the model");
  m["layers"] = layers;
  return m;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  HR_CHECK(f.good(), "cannot write " + path);
}

}  // namespace

HeadScores gate_open_probabilities(const EncoderModel& model) {
  NoGradGuard ng;
  HeadScores out(model.num_layers());
  for (size_t i = 0; i < model.num_layers(); ++i)
    if (const auto* a = attention_of(model, i); a && a->gates) out[i] = a->gates->open_probability().to_vector();
  return out;
}

HeadScores gate_eval_values(const EncoderModel& model) {
  NoGradGuard ng;
  HeadScores out(model.num_layers());
  for (size_t i = 0; i < model.num_layers(); ++i)
    if (const auto* a = attention_of(model, i); a && a->gates) out[i] = a->gates->eval_z().to_vector();
  return out;
}

PrunePlan plan_pruning(const EncoderModel& model, const PruneOptions& opt, const HeadScores* importance) {
  HR_CHECK(opt.by == "gates" || opt.by == "importance", "prune: --by must be gates or importance");
  const bool by_gates = opt.by == "gates";
  HR_CHECK(by_gates || (importance && importance->size() == model.num_layers()),
           "prune by importance: head importance scores are needed");
  const size_t L = model.num_layers();
  const HeadScores z = gate_eval_values(model), open = gate_open_probabilities(model);
  PrunePlan plan;
  plan.attention.assign(L, false);
  plan.heads.assign(L, 0);
  plan.keep.assign(L, {});
  bool any_gate = false;
  for (size_t i = 0; i < L; ++i) {
    if (const auto* a = attention_of(model, i); a && a->options().heads > 0) {
      plan.attention[i] = true;
      plan.heads[i] = a->options().heads;
      any_gate = any_gate || a->gates;
    }
  }
  HR_CHECK(!by_gates || any_gate, "prune by gates: the model has no gated layer (use --by importance)");

  // The score of each head: gates rank by open probability (--keep) or cut on z (threshold); an ungated head is
  // always open (z = 1, probability 1).
  auto score = [&](size_t i, int64_t h, bool for_ranking) -> float {
    if (!by_gates) return (*importance)[i][static_cast<size_t>(h)];
    const auto& row = for_ranking ? open[i] : z[i];
    return row.empty() ? 1.f : row[static_cast<size_t>(h)];
  };
  if (opt.keep >= 0) {
    std::vector<std::pair<size_t, int64_t>> heads;
    for (size_t i = 0; i < L; ++i)
      for (int64_t h = 0; h < plan.heads[i]; ++h) heads.emplace_back(i, h);
    std::stable_sort(heads.begin(), heads.end(), [&](const auto& a, const auto& b) {
      return score(a.first, a.second, true) > score(b.first, b.second, true);
    });
    for (size_t n = 0; n < heads.size() && static_cast<int64_t>(n) < opt.keep; ++n)
      plan.keep[heads[n].first].push_back(heads[n].second);
    for (auto& k : plan.keep) std::sort(k.begin(), k.end());
  } else {
    for (size_t i = 0; i < L; ++i)
      for (int64_t h = 0; h < plan.heads[i]; ++h)
        if (score(i, h, false) > opt.threshold) plan.keep[i].push_back(h);
  }

  // Residual logits: a layer whose pre-softmax logits feed the next attention layer, and that next layer, keep all
  // their heads (removing a sender head would change the receiver's logits, and a changed head count would swap the
  // fixed identity / interleave map for a learned one).
  for (size_t i = 0; i < L; ++i) {
    const auto* a = attention_of(model, i);
    const int64_t j = next_attention_layer(model, i);
    if (!a || !a->options().cross_layer || a->options().heads == 0 || j < 0) continue;
    if (!attention_of(model, static_cast<size_t>(j))->options().cross_layer) continue;
    for (size_t l : {i, static_cast<size_t>(j)}) {
      if (static_cast<int64_t>(plan.keep[l].size()) == plan.heads[l]) continue;
      plan.notes.push_back("layer " + std::to_string(l) + ": all heads kept (residual logits link layers " +
                           std::to_string(i) + " and " + std::to_string(j) + ")");
      plan.keep[l] = all_heads(plan.heads[l]);
    }
  }
  for (size_t i = 0; i < L; ++i) {
    const auto* a = attention_of(model, i);
    if (!a || !a->talk_logits) continue;
    const std::vector<int64_t> closed = talking_heads_closure(*a, plan.keep[i]);
    if (closed.size() != plan.keep[i].size()) {
      std::vector<int64_t> added;
      std::set_difference(closed.begin(), closed.end(), plan.keep[i].begin(), plan.keep[i].end(),
                          std::back_inserter(added));
      plan.notes.push_back("layer " + std::to_string(i) + ": heads " + list(added) +
                           " kept (talking heads mix their logits or weights into kept heads)");
      plan.keep[i] = closed;
    }
  }
  for (size_t i = 0; i < L; ++i) {
    std::vector<int64_t> open_removed;
    for (int64_t h = 0; h < plan.heads[i]; ++h)
      if (!std::binary_search(plan.keep[i].begin(), plan.keep[i].end(), h) &&
          (z[i].empty() || z[i][static_cast<size_t>(h)] > 0.f))
        open_removed.push_back(h);
    if (open_removed.empty()) continue;
    plan.exact = false;
    plan.notes.push_back("layer " + std::to_string(i) + ": heads " + list(open_removed) +
                         " removed although not closed (the outputs change)");
  }
  return plan;
}

PrunedModel prune_model(const EncoderModel& model, const Config& model_block, const PrunePlan& plan) {
  HR_CHECK(plan.keep.size() == model.num_layers(), "prune: the plan does not match the model");
  std::map<std::string, Tensor> src;
  for (const auto& [name, t] : model.named_parameters()) src[name] = t;
  ModelDims dims;
  dims.vocab_size = src.at("embeddings.token").dim(0);
  if (model.task() == EncoderModel::Task::Classification) dims.num_labels = src.at("classifier.weight").dim(0);

  PrunedModel out;
  YAML::Emitter emit;
  emit << pruned_model_node(model_block, model, plan);
  out.model_yaml = emit.c_str();
  out.model = build_model(Config::parse(out.model_yaml, "<pruned model>"), dims);

  const HeadScores z = gate_eval_values(model);
  std::vector<int64_t> prev_keep;  // kept heads of the previous attention layer (rows of a cross-layer map)
  std::map<std::string, std::vector<float>> sliced;  // new values of the attention parameters
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const MultiHeadAttention* a = attention_of(model, i);
    if (!a) continue;
    const std::string p = "layers." + std::to_string(i) + ".attn.";
    const int64_t H = a->options().heads, Dh = a->options().head_dim, D = model.d_model();
    const std::vector<int64_t>& keep = plan.keep[i];
    if (H > 0) {
      std::vector<float> fold(keep.size(), 1.f);  // gate folded into the output projection
      for (size_t k = 0; k < keep.size() && !z[i].empty(); ++k) fold[k] = z[i][static_cast<size_t>(keep[k])];
      for (const char* proj : {"q.", "k.", "v."}) {
        sliced[p + proj + "weight"] = head_rows(src.at(p + proj + "weight").to_vector(), D, Dh, keep);
        sliced[p + proj + "bias"] = head_rows(src.at(p + proj + "bias").to_vector(), 1, Dh, keep);
      }
      sliced[p + "o.weight"] = head_cols(src.at(p + "o.weight").to_vector(), D, H, Dh, keep, fold);
      for (const char* talk : {"talk.logits", "talk.weights"})
        if (src.count(p + talk)) sliced[p + talk] = submatrix(src.at(p + talk).to_vector(), H, keep, keep);
      if (src.count(p + "cross.map"))
        sliced[p + "cross.map"] = submatrix(src.at(p + "cross.map").to_vector(), H, prev_keep, keep);
    }
    prev_keep = keep;
  }

  for (auto& [name, dst] : out.model->named_parameters()) {
    if (auto it = sliced.find(name); it != sliced.end()) {
      if (static_cast<int64_t>(it->second.size()) == dst.numel())
        dst.copy_from(Tensor::from_vector(it->second, dst.shape()));
      // else: a cross-layer map between layers whose logits no longer flow (the previous layer is not
      // cross-layer); it is never used, so it keeps its initialisation
      continue;
    }
    auto it = src.find(name);
    HR_CHECK(it != src.end() && it->second.shape() == dst.shape(), "prune: no source for parameter '" + name + "'");
    dst.copy_from(it->second);
  }
  return out;
}

int prune_command(const PruneArgs& args) {
  const std::string out_dir = args.out_dir.empty() ? args.run_dir + "-pruned" : args.out_dir;
  HR_CHECK(!fs::exists(out_dir + "/config.yaml"), out_dir + " already holds a run; choose another --out");
  LoadedRun run = load_run(args.run_dir, args.which);
  HeadScores importance;
  if (args.options.by == "importance") {
    ImportanceOptions io = args.importance;
    io.device = run.config.train.device;
    io.batch_size = run.config.train.batch_size;
    importance = normalize_per_layer(head_importance(*run.model, *run.task, io));
  }
  const PrunePlan plan = plan_pruning(*run.model, args.options, importance.empty() ? nullptr : &importance);
  PrunedModel pruned = prune_model(*run.model, run.config.root.child("model"), plan);

  YAML::Node root = YAML::Load(run.config.root.dump());
  root["model"] = YAML::Load(pruned.model_yaml);
  YAML::Emitter emit;
  emit << root;
  fs::create_directories(out_dir);
  write_text(out_dir + "/config.yaml", std::string(emit.c_str()) + "\n");
  for (const char* f : {"vocab.txt", "labels.txt"})
    if (fs::exists(args.run_dir + "/" + f))
      fs::copy_file(args.run_dir + "/" + f, out_dir + "/" + f, fs::copy_options::overwrite_existing);
  save_checkpoint(out_dir + "/checkpoint-best.safetensors", *pruned.model, nullptr, TrainState{});

  nlohmann::json layers = nlohmann::json::array();
  int64_t before = 0, after = 0;
  for (size_t i = 0; i < plan.keep.size(); ++i) {
    layers.push_back({{"heads_before", plan.heads[i]}, {"kept", plan.keep[i]}});
    before += plan.heads[i];
    after += static_cast<int64_t>(plan.keep[i].size());
  }
  nlohmann::json summary = {{"source", args.run_dir},
                            {"checkpoint", args.which},
                            {"by", args.options.by},
                            {"layers", layers},
                            {"heads_before", before},
                            {"heads_after", after},
                            {"parameters_before", run.model->num_parameters()},
                            {"parameters_after", pruned.model->num_parameters()},
                            {"exact", plan.exact},
                            {"notes", plan.notes}};
  if (args.options.keep >= 0) summary["keep"] = args.options.keep;
  else summary["threshold"] = args.options.threshold;
  write_text(out_dir + "/prune.json", summary.dump(2) + "\n");

  std::cout << "pruned " << args.run_dir << " (" << args.which << "): heads " << before << " -> " << after
            << ", parameters " << run.model->num_parameters() << " -> " << pruned.model->num_parameters() << "\n";
  for (size_t i = 0; i < plan.keep.size(); ++i)
    if (plan.attention[i] || plan.heads[i] > 0)
      std::cout << "  layer " << i << ": " << plan.heads[i] << " -> " << plan.keep[i].size() << " heads "
                << list(plan.keep[i]) << "\n";
  for (const auto& n : plan.notes) std::cout << "  note: " << n << "\n";
  std::cout << (plan.exact ? "the pruned model computes what the gated model computes in evaluation"
                           : "approximate: heads that were not closed were removed")
            << "\nwritten to " << out_dir << "\n";
  return 0;
}

}  // namespace hr
