#include "train/tools/head_roles.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "models/head_pruning.h"
#include "train/run/load_encoder.h"
#include "train/run/trainer.h"
#include "train/tools/plot.h"

namespace hr {

HeadRoleAccumulator::HeadRoleAccumulator(std::vector<int64_t> heads_per_layer, int32_t pad_id, int32_t cls_id,
                                         int32_t sep_id)
    : queries_(heads_per_layer.size()), with_prev_(heads_per_layer.size()), with_next_(heads_per_layer.size()),
      pad_(pad_id), cls_(cls_id), sep_(sep_id) {
  for (int64_t h : heads_per_layer) sums_.emplace_back(static_cast<size_t>(std::max<int64_t>(h, 0)));
  // tokens are counted once a batch, by the first layer that has heads (a model may begin without attention)
  const auto first = std::find_if(heads_per_layer.begin(), heads_per_layer.end(), [](int64_t h) { return h > 0; });
  counting_layer_ = static_cast<size_t>(first - heads_per_layer.begin());
}

void HeadRoleAccumulator::add(size_t layer, const std::vector<float>& probs, const std::vector<int32_t>& ids,
                              int64_t B, int64_t T) {
  auto& sums = sums_.at(layer);
  const int64_t H = static_cast<int64_t>(sums.size());
  HR_CHECK(static_cast<int64_t>(probs.size()) == B * H * T * T && static_cast<int64_t>(ids.size()) == B * T,
           "head roles: attention weights of layer " + std::to_string(layer) + " do not match the batch");
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* row = ids.data() + b * T;
    for (int64_t i = 0; i < T; ++i) {
      if (row[i] == pad_) continue;
      const bool prev = i > 0 && row[i - 1] != pad_, next = i + 1 < T && row[i + 1] != pad_;
      queries_[layer] += 1, with_prev_[layer] += prev, with_next_[layer] += next;
      if (layer == counting_layer_) ++tokens_;
      for (int64_t h = 0; h < H; ++h) {
        const float* p = probs.data() + ((b * H + h) * T + i) * T;  // query i's weights over the keys
        Sums& s = sums[static_cast<size_t>(h)];
        if (prev) s.attention[static_cast<size_t>(HeadRole::Prev)] += p[i - 1];
        if (next) s.attention[static_cast<size_t>(HeadRole::Next)] += p[i + 1];
        s.attention[static_cast<size_t>(HeadRole::Self)] += p[i];
        for (int64_t j = 0; j < T; ++j) {
          if (row[j] == pad_) continue;
          if (row[j] == cls_) s.attention[static_cast<size_t>(HeadRole::Cls)] += p[j];
          if (row[j] == sep_) s.attention[static_cast<size_t>(HeadRole::Sep)] += p[j];
          if (p[j] > 0.f) s.entropy -= static_cast<double>(p[j]) * std::log(static_cast<double>(p[j]));
        }
      }
    }
  }
}

std::vector<std::vector<RoleStats>> HeadRoleAccumulator::averages() const {
  std::vector<std::vector<RoleStats>> out(sums_.size());
  for (size_t l = 0; l < sums_.size(); ++l) {
    auto per = [](double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
    for (const Sums& s : sums_[l]) {
      RoleStats r;
      for (size_t k = 0; k < r.attention.size(); ++k) {
        const int64_t n = k == static_cast<size_t>(HeadRole::Prev)   ? with_prev_[l]
                          : k == static_cast<size_t>(HeadRole::Next) ? with_next_[l]
                                                                     : queries_[l];
        r.attention[k] = per(s.attention[k], n);
      }
      r.entropy = per(s.entropy, queries_[l]);
      out[l].push_back(r);
    }
  }
  return out;
}

std::string dominant_role(const RoleStats& s, double mean_tokens, double threshold) {
  const auto best = std::max_element(s.attention.begin(), s.attention.end());
  if (*best >= threshold) return kHeadRoleNames[static_cast<size_t>(best - s.attention.begin())];
  return mean_tokens > 1 && s.entropy >= 0.8 * std::log(mean_tokens) ? "broad" : "mixed";
}

namespace {

// Rows of plain text as [CLS] text [SEP], cut to max_len.
std::vector<std::vector<int32_t>> text_rows(const std::string& path, const Tokenizer& tok, int64_t max_len,
                                            int64_t limit) {
  std::ifstream in(path);
  if (!in) throw UsageError("heads --roles: cannot read --text-file " + path);
  const Vocab& v = tok.vocab();
  std::vector<std::vector<int32_t>> rows;
  for (std::string line; std::getline(in, line) && (limit == 0 || static_cast<int64_t>(rows.size()) < limit);) {
    const std::vector<int32_t> ids = tok.encode(line).ids;
    if (ids.empty()) continue;
    std::vector<int32_t> r{v.cls_id()};
    r.insert(r.end(), ids.begin(), ids.begin() + std::min<int64_t>(static_cast<int64_t>(ids.size()), max_len - 2));
    r.push_back(v.sep_id());
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw UsageError("heads --roles: " + path + " has no text (one input a line)");
  return rows;
}

void write_role_png(const std::string& path, const std::vector<std::vector<RoleStats>>& stats,
                    const std::vector<size_t>& layers, int64_t max_heads, const std::string& title, float hi,
                    const std::function<double(const RoleStats&)>& value) {
  ValueHeatmap t;
  t.title = title;
  t.rows = static_cast<int64_t>(layers.size());
  t.cols = max_heads;
  t.values.assign(static_cast<size_t>(t.rows * t.cols), std::numeric_limits<float>::quiet_NaN());
  for (size_t r = 0; r < layers.size(); ++r) {
    t.row_labels.push_back("layer " + std::to_string(layers[r]));
    const auto& heads = stats[layers[r]];
    for (size_t h = 0; h < heads.size(); ++h)
      t.values[r * static_cast<size_t>(t.cols) + h] = static_cast<float>(value(heads[h]));
  }
  for (int64_t h = 0; h < t.cols; ++h) t.col_labels.push_back("head " + std::to_string(h));
  t.lo = 0;
  t.hi = hi;
  write_value_heatmap_png(path, t);
}

std::string png_path(const HeadsArgs& heads, const std::string& stat) {
  if (heads.png.empty()) return heads.run_dir + "/roles-" + stat + ".png";
  const size_t dot = heads.png.rfind(".png");
  return dot == std::string::npos ? heads.png + "-" + stat + ".png" : heads.png.substr(0, dot) + "-" + stat + ".png";
}

// The statistics of every attention layer over the rows a source gives.
struct RoleMeasurement {
  std::vector<std::vector<RoleStats>> stats;  // [layer][head]; empty for a layer without attention
  std::vector<size_t> attention_layers;       // the layers whose maps forward() returns, in order
  int64_t max_heads = 1, tokens = 0, rows = 0;
  double mean_tokens() const { return static_cast<double>(tokens) / static_cast<double>(std::max<int64_t>(1, rows)); }
};

// Rows [at, end) of the source as one padded batch.
using BatchSource = std::function<EncoderInput(int64_t at, int64_t end)>;

RoleMeasurement measure(EncoderModel& model, const Vocab& vocab, int64_t rows, int64_t batch_size, int64_t batches,
                        const BatchSource& batch_of) {
  RoleMeasurement m;
  std::vector<int64_t> heads_per_layer;  // 0 for a layer without attention
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const AttentionHeads* a = model.layer(i).heads();
    heads_per_layer.push_back(a ? a->num_heads() : 0);
    if (a && a->num_heads() > 0) m.attention_layers.push_back(i), m.max_heads = std::max(m.max_heads, a->num_heads());
  }
  HeadRoleAccumulator acc(heads_per_layer, vocab.pad_id(), vocab.cls_id(), vocab.sep_id());
  NoGradGuard no_grad;
  model.eval();
  for (int64_t at = 0, b = 0; at < rows && (batches == 0 || b < batches); at += batch_size, ++b) {
    const EncoderInput in = batch_of(at, std::min(rows, at + batch_size));
    std::vector<Tensor> maps;  // per attention layer: (B, H, T, T)
    model.forward(in, &maps);
    HR_CHECK(maps.size() == m.attention_layers.size(), "head roles: the model returned an unexpected number of maps");
    const std::vector<int32_t> ids = in.ids.to_ids();
    const int64_t B = in.ids.dim(0), T = in.ids.dim(1);
    for (size_t i = 0; i < maps.size(); ++i) acc.add(m.attention_layers[i], maps[i].to_vector(), ids, B, T);
    m.rows += B;
  }
  HR_CHECK(acc.tokens() > 0, "heads --roles: no tokens to measure");
  m.stats = acc.averages();
  m.tokens = acc.tokens();
  return m;
}

// The table, the gates' verdict (z = 0 at evaluation: closed) and the count of heads by role.
void print_roles(const RoleMeasurement& m, const HeadScores& z, const std::string& source) {
  const bool gated = std::any_of(z.begin(), z.end(), [](const auto& r) { return !r.empty(); });
  std::printf("%-6s %-5s %6s %6s %6s %6s %6s %8s  %-6s%s\n", "layer", "head", "prev", "next", "self", "cls", "sep",
              "entropy", "role", gated ? "  gate" : "");
  std::map<std::string, std::pair<int, int>> by_role;  // role -> (heads, kept by the gates)
  for (size_t l : m.attention_layers) {
    for (size_t h = 0; h < m.stats[l].size(); ++h) {
      const RoleStats& s = m.stats[l][h];
      const std::string role = dominant_role(s, m.mean_tokens());
      const bool has_gate = gated && !z[l].empty(), open = has_gate && z[l][h] > 0.f;
      by_role[role].first += 1;
      by_role[role].second += has_gate ? open : 1;
      std::printf("%-6zu %-5zu %6.3f %6.3f %6.3f %6.3f %6.3f %8.3f  %-6s%s\n", l, h, s.attention[0], s.attention[1],
                  s.attention[2], s.attention[3], s.attention[4], s.entropy, role.c_str(),
                  has_gate ? (open ? "  open" : "  closed") : "");
    }
  }
  std::printf("over %lld tokens of %lld %s (%.1f tokens each); role: an average weight >= 0.5 on one kind of "
              "token, else broad (entropy >= 0.8 log(tokens)) or mixed\n",
              static_cast<long long>(m.tokens), static_cast<long long>(m.rows), source.c_str(), m.mean_tokens());
  for (const auto& [role, n] : by_role) {
    if (gated)
      std::printf("role %-6s %3d heads, %3d kept by the gates\n", role.c_str(), n.first, n.second);
    else
      std::printf("role %-6s %3d heads\n", role.c_str(), n.first);
  }
}

void draw_roles(const RoleMeasurement& m, const HeadsArgs& heads) {
  const char* what[] = {"the previous token", "the next token", "the token itself", "[CLS]", "[SEP]"};
  for (size_t k = 0; k < kHeadRoleNames.size(); ++k) {
    const std::string path = png_path(heads, kHeadRoleNames[k]);
    write_role_png(path, m.stats, m.attention_layers, m.max_heads, std::string("average attention to ") + what[k], 1.f,
                   [k](const RoleStats& s) { return s.attention[k]; });
    std::cout << "wrote " << path << "\n";
  }
  const std::string path = png_path(heads, "entropy");
  write_role_png(path, m.stats, m.attention_layers, m.max_heads, "attention entropy (nats)",
                 static_cast<float>(std::log(std::max(2.0, m.mean_tokens()))),
                 [](const RoleStats& s) { return s.entropy; });
  std::cout << "wrote " << path << "\n";
}

}  // namespace

int head_roles_command(const HeadsArgs& heads, const RolesArgs& roles) {
  if (roles.batches < 0) throw UsageError("heads --roles: --batches must be >= 0");
  RoleMeasurement m;
  if (roles.text_file.empty()) {  // the run's split, through its task and data
    LoadedRun run = load_run(heads.run_dir, heads.which);
    if (!run.task->has_split(roles.split))
      throw UsageError("heads --roles: the run's data has no '" + roles.split +
                       "' split; give --split or --text-file FILE (plain text, one input a line)");
    const Device device = run.config.train.device;
    m = measure(*run.model, run.tokenizer->vocab(), run.task->split_rows(roles.split),
                roles.batch_size > 0 ? roles.batch_size : run.config.train.batch_size, roles.batches,
                [&](int64_t at, int64_t end) {
                  std::vector<int64_t> idx(static_cast<size_t>(end - at));
                  std::iota(idx.begin(), idx.end(), at);
                  return run.task->make_split_batch(roles.split, idx, device).input;
                });
    print_roles(m, gate_eval_values(*run.model), "'" + roles.split + "' rows");
  } else {  // a text file needs only the encoder: an imported BERT has no data or labels
    LoadedEncoder enc = load_encoder(heads.run_dir, heads.which);
    const Vocab& vocab = enc.tokenizer->vocab();
    const int64_t batch_size = roles.batch_size > 0 ? roles.batch_size : enc.config.train.batch_size;
    // at most 128 tokens a line, as Clark et al. measured: longer rows cost T^2 memory for the maps
    const std::vector<std::vector<int32_t>> text =
        text_rows(roles.text_file, *enc.tokenizer, std::min<int64_t>(enc.model->max_len(), 128),
                  roles.batches > 0 ? roles.batches * batch_size : 0);
    m = measure(*enc.model, vocab, static_cast<int64_t>(text.size()), batch_size, roles.batches,
                [&](int64_t at, int64_t end) {
                  const std::vector<std::vector<int32_t>> rows(text.begin() + at, text.begin() + end);
                  return make_encoder_input(rows, vocab.pad_id(), enc.config.train.device);  // one segment
                });
    print_roles(m, gate_eval_values(*enc.model), "lines");
  }
  draw_roles(m, heads);
  return 0;
}

}  // namespace hr
