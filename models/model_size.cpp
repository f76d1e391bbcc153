#include "models/model_size.h"

#include <unistd.h>

#include <cstdio>
#include <optional>

namespace hr {

namespace {

// A count the builder reads, or nullopt when it is absent or not one (the builder then names the problem).
std::optional<double> count(const Config& c, const std::string& key) {
  try {
    if (!c.has(key)) return std::nullopt;
    return static_cast<double>(c.get<int64_t>(key));
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

struct Part {
  double parameters = 0;
  std::string where;  // "model.layers[1]: 1000000000 layers (repeat) of ..."
  double layers = 0;  // a layer group's repeat; 0 for the embeddings
};

// The sums over the parts, and the parts that hold the most parameters and the most layers.
struct Sizes {
  double parameters = 0, layers = 0;
  const Part* largest = nullptr;
  const Part* deepest = nullptr;
};

Sizes sizes_of(const std::vector<Part>& parts) {
  Sizes s;
  for (const Part& p : parts) {
    s.parameters += p.parameters;
    s.layers += p.layers;
    if (!s.largest || p.parameters > s.largest->parameters) s.largest = &p;
    if (!s.deepest || p.layers > s.deepest->layers) s.deepest = &p;
  }
  return s;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 1e15 ? "%.0f" : "%.3g", v);
  return buf;
}

// The token, position and segment embeddings, and what sizes them.
Part embeddings_part(const Config& model, const ModelDims& dims) {
  const double D = count(model, "d_model").value_or(0), L = count(model, "max_len").value_or(0);
  const double S = count(model, "segments").value_or(static_cast<double>(dims.segments));
  const double V = static_cast<double>(dims.vocab_size);
  return {(V + L + S + 2) * D, "the embeddings: model.d_model " + number_text(D) + " x (model.max_len " +
                                   number_text(L) + " + the vocabulary's " + number_text(V) +
                                   " tokens (tokenizer.vocab or tokenizer.vocab_size))"};
}

// Layer group g of model.layers, and the keys that size it.
Part layer_group_part(const Config& model, const Config& group, size_t g) {
  const double D = count(model, "d_model").value_or(0);
  const std::string key = "model.layers[" + std::to_string(g) + "]";
  const bool own_ffn = group.has("ffn_dim");
  const double repeat = count(group, "repeat").value_or(1),
               f = count(own_ffn ? group : model, "ffn_dim").value_or(4 * D);
  double heads = 0, head_dim = 0;
  if (group.has("attention") && group.child("attention").has("heads")) {
    const Config a = group.child("attention");
    heads = count(a, "heads").value_or(0);
    head_dim = count(a, "head_dim").value_or(0);
  }
  const double inner = heads * head_dim;
  // q, k, v, o with biases, two layer norms, the feed-forward's two linears with biases
  const double layer = 4 * D * inner + 3 * inner + D + 4 * D + 2 * D * f + f + D + 2 * heads * heads;
  return {std::max(0.0, repeat) * layer,
          key + ": repeat " + number_text(repeat) + " x " + number_text(layer) + " parameters a layer (model.d_model " +
              number_text(D) + ", " + (own_ffn ? key + ".ffn_dim " : "model.ffn_dim ") + number_text(f) + ", " + key +
              ".attention.heads " + number_text(heads) + " x head_dim " + number_text(head_dim) + ")",
          std::max(0.0, repeat)};
}

// Each part of the model: block that can be large, with its parameters: the embeddings, then every layer group.
std::vector<Part> parts_of(const Config& model, const ModelDims& dims) {
  std::vector<Part> parts;
  try {
    parts.push_back(embeddings_part(model, dims));
    if (!model.has("layers")) return parts;
    const std::vector<Config> groups = model.child("layers").items();
    for (size_t g = 0; g < groups.size(); ++g) parts.push_back(layer_group_part(model, groups[g], g));
  } catch (const ConfigError&) {  // a block of the wrong shape: the builder says so
  }
  return parts;
}

}  // namespace

double machine_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

std::string bytes_text(double bytes) {
  char buf[48];
  if (bytes < 1e9) std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else if (bytes < 1e12) std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else std::snprintf(buf, sizeof buf, "%.3g TB", bytes / 1e12);
  return buf;
}

double estimate_parameters(const Config& model, const ModelDims& dims) {
  double total = 0;
  for (const Part& p : parts_of(model, dims)) total += p.parameters;
  return total;
}

void check_model_fits(const Config& model, const ModelDims& dims) {
  const double need = 8 * estimate_parameters(model, dims), have = machine_memory_bytes();
  if (need > have) fail_model_size(model, dims, "this machine has " + bytes_text(have));
}

void fail_model_size(const Config& model, const ModelDims& dims, const std::string& why) {
  const std::vector<Part> parts = parts_of(model, dims);
  const Sizes s = sizes_of(parts);
  model.fail("the model has " + number_text(s.parameters) + " parameters, which need " + bytes_text(8 * s.parameters) +
             " for weights and gradients; " + why + ". The largest part is " +
             (s.largest ? s.largest->where : std::string("not known")) + ": make it smaller");
}

void check_model_countable(const Config& model, const ModelDims& dims) {
  constexpr double kMaxParameters = 9007199254740992.0, kMaxLayers = 1e4;  // 2^53
  const std::vector<Part> parts = parts_of(model, dims);
  const Sizes s = sizes_of(parts);
  if (s.layers > kMaxLayers)
    model.fail("the model has " + number_text(s.layers) + " layers; a model is described up to " +
               number_text(kMaxLayers) + ". The deepest part is " + s.deepest->where + ": make it smaller");
  if (s.parameters > kMaxParameters)
    model.fail("the model has " + number_text(s.parameters) + " parameters, more than 2^53, which cannot be counted "
               "exactly. The largest part is " + s.largest->where + ": make it smaller");
}

std::string training_memory_problem(double parameters, int64_t layers, int64_t d_model, int64_t rows,
                                    int64_t row_len) {
  const double activations = 4.0 * static_cast<double>(layers) * static_cast<double>(rows) *
                             static_cast<double>(row_len) * static_cast<double>(d_model);
  const double need = 12 * parameters + activations, have = machine_memory_bytes();
  if (need <= have) return "";
  return "a batch of " + std::to_string(rows) + " rows of " + std::to_string(row_len) + " tokens needs at least " +
         bytes_text(need) + " to train (" + bytes_text(activations) + " of activations, " +
         bytes_text(12 * parameters) + " of weights, gradients and optimizer state); this machine has " +
         bytes_text(have);
}

}  // namespace hr
