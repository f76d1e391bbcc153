#include "train/tools/head_importance.h"

#include <cmath>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"

namespace hr {

HeadScores head_importance(EncoderModel& model, const Task& task, const ImportanceOptions& opt) {
  HR_CHECK(opt.batch_size > 0, "head importance: batch size must be > 0");
  const int64_t rows = task.split_rows(opt.split);
  HR_CHECK(rows > 0, "head importance: the '" + opt.split + "' split is empty");
  std::vector<AttentionHeads*> attn(model.num_layers(), nullptr);
  std::vector<Tensor> masks(model.num_layers());
  HeadScores total(model.num_layers());
  for (size_t i = 0; i < model.num_layers(); ++i) {
    if (AttentionHeads* a = model.layer(i).heads(); a && a->num_heads() > 0) {
      attn[i] = a;
      total[i].assign(static_cast<size_t>(a->num_heads()), 0.f);
    }
  }
  const bool was_training = model.training();
  model.eval();
  int64_t examples = 0, batch_index = 0;
  for (int64_t at = 0; at < rows && (opt.batches == 0 || batch_index < opt.batches); at += opt.batch_size) {
    std::vector<int64_t> idx;
    for (int64_t r = at; r < std::min(rows, at + opt.batch_size); ++r) idx.push_back(r);
    const int64_t B = static_cast<int64_t>(idx.size());
    for (size_t i = 0; i < attn.size(); ++i) {
      if (!attn[i]) continue;
      masks[i] = Tensor::full({B, attn[i]->num_heads()}, 1.f, opt.device).set_requires_grad();
      attn[i]->set_head_mask(masks[i]);
    }
    const Batch batch = task.make_split_batch(opt.split, idx, opt.device);
    // The loss is a mean over the batch; times B it is the sum, whose gradient wrt xi_{b,h} is example b's own.
    backward(scale(task.loss(model, batch, 0.f), static_cast<float>(B)));
    for (size_t i = 0; i < attn.size(); ++i) {
      if (!attn[i]) continue;
      const Tensor g = masks[i].grad();
      if (!g.defined()) continue;  // the loss does not depend on this layer's heads
      const std::vector<float> gv = g.to_vector();  // (B, H)
      const size_t H = total[i].size();
      for (size_t b = 0; b < static_cast<size_t>(B); ++b)
        for (size_t h = 0; h < H; ++h) total[i][h] += std::fabs(gv[b * H + h]);
    }
    examples += B;
    ++batch_index;
  }
  for (AttentionHeads* a : attn)
    if (a) a->set_head_mask(Tensor());
  model.zero_grad();
  model.train(was_training);
  for (auto& row : total)
    for (float& v : row) v /= static_cast<float>(examples);
  return total;
}

HeadScores normalize_per_layer(const HeadScores& scores) {
  HeadScores out = scores;
  for (auto& row : out) {
    double norm = 0;
    for (float v : row) norm += static_cast<double>(v) * v;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (float& v : row) v = static_cast<float>(v / norm);
  }
  return out;
}

}  // namespace hr
