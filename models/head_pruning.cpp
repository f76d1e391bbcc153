#include "models/head_pruning.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernels/base/error.h"

namespace hr {

namespace {

// The next layer after i that has attention heads, or -1.
int64_t next_heads_layer(const EncoderModel& model, size_t i) {
  for (size_t j = i + 1; j < model.num_layers(); ++j)
    if (model.layer(j).heads()) return static_cast<int64_t>(j);
  return -1;
}

std::vector<int64_t> all_heads(int64_t H) {
  std::vector<int64_t> v(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) v[static_cast<size_t>(h)] = h;
  return v;
}

// One layer group per layer, each heads layer rewritten by the layer itself.
YAML::Node pruned_model_node(const Config& model_block, const EncoderModel& model, const PrunePlan& plan) {
  size_t layers = 0;
  YAML::Node m = one_group_per_layer(model_block, [&](size_t index, YAML::Node& layer) {
    HR_CHECK(index < model.num_layers(), "prune: the config's layer groups do not match the model");
    if (plan.attention[index]) model.layer(index).heads()->write_pruned_block(layer, plan.keep[index]);
    layers = index + 1;
  });
  HR_CHECK(layers == model.num_layers(), "prune: the config's layer groups do not match the model");
  return m;
}

HeadScores per_heads_layer(const EncoderModel& model, std::vector<float> (AttentionHeads::*get)() const) {
  HeadScores out(model.num_layers());
  for (size_t i = 0; i < model.num_layers(); ++i)
    if (const AttentionHeads* a = model.layer(i).heads()) out[i] = (a->*get)();
  return out;
}

}  // namespace

YAML::Node one_group_per_layer(const Config& model_block, const std::function<void(size_t, YAML::Node&)>& edit) {
  YAML::Node m = YAML::Load(model_block.dump());
  YAML::Node layers(YAML::NodeType::Sequence);
  size_t index = 0;
  for (const YAML::Node& group : m["layers"]) {
    const int64_t repeat = group["repeat"] ? group["repeat"].as<int64_t>() : 1;
    for (int64_t r = 0; r < repeat; ++r, ++index) {
      YAML::Node layer = YAML::Clone(group);
      layer.remove("repeat");
      edit(index, layer);
      layers.push_back(layer);
    }
  }
  m["layers"] = layers;
  return m;
}

std::string head_list(const std::vector<int64_t>& heads) {
  std::string s;
  for (int64_t h : heads) s += (s.empty() ? "" : ", ") + std::to_string(h);
  return "[" + s + "]";
}

HeadScores gate_open_probabilities(const EncoderModel& model) {
  return per_heads_layer(model, &AttentionHeads::gate_open_probability);
}

HeadScores gate_eval_values(const EncoderModel& model) { return per_heads_layer(model, &AttentionHeads::gate_values); }

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
    if (const AttentionHeads* a = model.layer(i).heads(); a && a->num_heads() > 0) {
      plan.attention[i] = true;
      plan.heads[i] = a->num_heads();
      any_gate = any_gate || !z[i].empty();
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

  // Residual logits: a layer whose pre-softmax logits feed the next heads layer, and that next layer, keep all their
  // heads (removing a sender head would change the receiver's logits, and a changed head count would swap the fixed
  // identity / interleave map for a learned one).
  for (size_t i = 0; i < L; ++i) {
    const AttentionHeads* a = model.layer(i).heads();
    const int64_t j = next_heads_layer(model, i);
    if (!a || !a->cross_layer() || a->num_heads() == 0 || j < 0) continue;
    if (!model.layer(static_cast<size_t>(j)).heads()->cross_layer()) continue;
    for (size_t l : {i, static_cast<size_t>(j)}) {
      if (static_cast<int64_t>(plan.keep[l].size()) == plan.heads[l]) continue;
      plan.notes.push_back("layer " + std::to_string(l) + ": all heads kept (residual logits link layers " +
                           std::to_string(i) + " and " + std::to_string(j) + ")");
      plan.keep[l] = all_heads(plan.heads[l]);
    }
  }
  for (size_t i = 0; i < L; ++i) {
    if (!plan.attention[i]) continue;
    const std::vector<int64_t> closed = model.layer(i).heads()->exact_closure(plan.keep[i]);
    if (closed.size() != plan.keep[i].size()) {
      std::vector<int64_t> added;
      std::set_difference(closed.begin(), closed.end(), plan.keep[i].begin(), plan.keep[i].end(),
                          std::back_inserter(added));
      plan.notes.push_back("layer " + std::to_string(i) + ": heads " + head_list(added) +
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
    plan.notes.push_back("layer " + std::to_string(i) + ": heads " + head_list(open_removed) +
                         " removed although not closed (the outputs change)");
  }
  return plan;
}

PrunedModel prune_model(const EncoderModel& model, const Config& model_block, const PrunePlan& plan) {
  HR_CHECK(plan.keep.size() == model.num_layers(), "prune: the plan does not match the model");
  PrunedModel out;
  YAML::Emitter emit;
  emit << pruned_model_node(model_block, model, plan);
  out.model_yaml = emit.c_str();
  out.model = build_model(Config::parse(out.model_yaml, "<pruned model>"), model.dims());

  // Each heads layer slices its own parameters into the pruned layer; everything else is copied by name.
  std::set<const TensorImpl*> sliced;
  std::vector<int64_t> prev_keep;  // kept heads of the previous heads layer (rows of a cross-layer map)
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const AttentionHeads* src = model.layer(i).heads();
    if (!src) continue;
    const AttentionHeads* dst = out.model->layer(i).heads();
    HR_CHECK(dst, "prune: layer " + std::to_string(i) + " of the pruned model has no heads");
    const auto values = src->pruned_parameters(plan.keep[i], prev_keep);
    for (auto& [name, param] : dst->heads_module().named_parameters()) {
      for (const auto& [vname, v] : values) {
        if (vname != name) continue;
        // a cross-layer map between layers whose logits no longer flow keeps its initialisation: it is never used
        if (v.shape() == param.shape()) param.copy_from(v);
        sliced.insert(param.impl());
      }
    }
    prev_keep = plan.keep[i];
  }
  std::map<std::string, Tensor> source;
  for (const auto& [name, t] : model.named_parameters()) source[name] = t;
  for (auto& [name, dst] : out.model->named_parameters()) {
    if (sliced.count(dst.impl())) continue;
    auto it = source.find(name);
    HR_CHECK(it != source.end() && it->second.shape() == dst.shape(), "prune: no source for parameter '" + name + "'");
    dst.copy_from(it->second);
  }
  return out;
}

}  // namespace hr
