#include "train/tools/attention_maps.h"

#include <iostream>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "train/tools/plot.h"
#include "train/run/trainer.h"

namespace hr {

namespace {

struct TokenRow {
  std::vector<int32_t> ids, segments;
  std::vector<std::string> labels;
};

// [CLS] a [SEP] (b [SEP]), cut to max_len, with the token strings for the axes.
TokenRow encode_input(const Tokenizer& tok, const std::string& a, const std::string& b, int64_t max_len) {
  const Vocab& v = tok.vocab();
  TokenRow r;
  auto push = [&](int32_t id, int32_t seg) {
    if (static_cast<int64_t>(r.ids.size()) >= max_len) return;
    r.ids.push_back(id);
    r.segments.push_back(seg);
    r.labels.push_back(v.token(id));
  };
  push(v.cls_id(), 0);
  for (int32_t id : tok.encode(a).ids) push(id, 0);
  push(v.sep_id(), 0);
  if (!b.empty()) {
    for (int32_t id : tok.encode(b).ids) push(id, 1);
    push(v.sep_id(), 1);
  }
  if (r.ids.back() != v.sep_id()) {  // keep the closing [SEP] when the input was cut
    r.ids.back() = v.sep_id();
    r.labels.back() = "[SEP]";
  }
  return r;
}

}  // namespace

int attention_command(const AttentionArgs& args) {
  LoadedRun run = load_run(args.run_dir, args.which, /*load_data=*/false);
  // one text per input field of the task ({"text"}, {"question", "context"}, {"premise", "hypothesis"}, ...)
  const std::vector<std::string> fields = run.task->input_fields();
  std::vector<std::string> texts = args.texts;
  if (!args.question.empty() || !args.context.empty()) {
    if (fields != std::vector<std::string>{"question", "context"} || !texts.empty() || args.question.empty() ||
        args.context.empty())
      throw UsageError("attention: --question and --context go together, for QA runs; or give --text once per input");
    texts = {args.question, args.context};
  }
  const HeatmapGrid grid = attention_grid(run, texts, "attention weights (query rows x key columns): " + args.run_dir,
                                          args.layer, args.head);
  const std::string out = args.out.empty() ? args.run_dir + "/attention.png" : args.out;
  write_heatmap_grid_png(out, grid);
  std::cout << "wrote " << out << " (" << grid.grid_rows << " x " << grid.grid_cols << " maps of " << grid.rows
            << " tokens)\n";
  return 0;
}

HeatmapGrid attention_grid(LoadedRun& run, const std::vector<std::string>& texts, const std::string& title,
                           int layer, int head) {
  EncoderModel& model = *run.model;
  // the first text is segment 0, a second segment 1
  const std::vector<std::string> fields = run.task->input_fields();
  HR_CHECK(fields.size() <= 2, "attention: the run's task has more than two input texts");
  if (texts.size() != fields.size()) {
    std::string names;
    for (const auto& f : fields) names += (names.empty() ? "" : ", then ") + f;
    throw UsageError("attention: this run's input" + std::string(fields.size() > 1 ? "s are " : " is ") + names +
                     ": give --text " + (fields.size() > 1 ? "once for each, in that order" : "once"));
  }
  const TokenRow row = encode_input(*run.tokenizer, texts[0], texts.size() > 1 ? texts[1] : "", model.max_len());
  std::vector<std::vector<int32_t>> segs{row.segments};
  const EncoderInput in = make_encoder_input({row.ids}, run.tokenizer->vocab().pad_id(), model.device(),
                                             model.segments() > 0 ? &segs : nullptr);
  std::vector<Tensor> maps;  // per attention layer: (1, H, T, T)
  {
    NoGradGuard ng;
    model.eval();
    model.forward(in, &maps);
  }

  // layers x heads; a layer's missing heads (pruned) and closed gates are marked
  const int64_t T = static_cast<int64_t>(row.ids.size());
  int64_t max_heads = 1;
  std::vector<const AttentionHeads*> attn;
  for (size_t i = 0; i < model.num_layers(); ++i) {
    attn.push_back(model.layer(i).heads());
    if (attn.back()) max_heads = std::max(max_heads, attn.back()->num_heads());
  }
  HeatmapGrid grid;
  grid.rows = grid.cols = T;
  grid.x_labels = grid.y_labels = row.labels;
  size_t map_index = 0;
  const bool single = layer >= 0 || head >= 0;
  if (single) {
    HR_CHECK(layer >= 0 && head >= 0, "attention: give both --layer and --head");
    HR_CHECK(layer < static_cast<int>(model.num_layers()) && attn[static_cast<size_t>(layer)],
             "attention: --layer " + std::to_string(layer) + " is not an attention layer of this model (its " +
                 std::to_string(model.num_layers()) + " layers are numbered 0 to " +
                 std::to_string(model.num_layers() - 1) + ")");
    const int64_t heads = attn[static_cast<size_t>(layer)]->num_heads();
    HR_CHECK(head < heads, "attention: --head " + std::to_string(head) + ": layer " +
                                    std::to_string(layer) + " has " + std::to_string(heads) +
                                    " heads, numbered 0 to " + std::to_string(heads - 1));
  }
  for (size_t i = 0; i < attn.size(); ++i) {
    if (!attn[i]) continue;
    const int64_t H = attn[i]->num_heads();
    std::vector<float> probs;
    if (H > 0) probs = maps.at(map_index++).to_vector();  // (1, H, T, T)
    const std::vector<float> z = attn[i]->gate_values();
    if (single && static_cast<int>(i) != layer) continue;
    grid.row_titles.push_back("layer " + std::to_string(i));
    for (int64_t h = 0; h < max_heads; ++h) {
      if (single && h != head) continue;
      HeatmapPanel p;
      if (h < H) {
        p.values.assign(probs.begin() + h * T * T, probs.begin() + (h + 1) * T * T);
        if (!z.empty() && z[static_cast<size_t>(h)] == 0.f) {
          p.marked = true;
          p.mark_label = "gate off";
        }
      } else {
        p.marked = true;
        p.mark_label = "pruned";
      }
      grid.panels.push_back(std::move(p));
    }
  }
  if (single) HR_CHECK(!grid.panels.empty() && head < max_heads, "attention: no head " + std::to_string(head));
  grid.grid_rows = static_cast<int64_t>(grid.row_titles.size());
  grid.grid_cols = single ? 1 : max_heads;
  for (int64_t h = 0; h < grid.grid_cols; ++h)
    grid.col_titles.push_back("head " + std::to_string(single ? head : h));
  grid.title = title;
  return grid;
}

}  // namespace hr
