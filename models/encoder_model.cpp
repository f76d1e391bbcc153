#include "models/encoder_model.h"

#include <new>

#include "kernels/base/error.h"
#include "framework/ops.h"
#include "models/layer_registry.h"
#include "models/model_size.h"

namespace hr {

EncoderInput make_encoder_input(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id, Device d,
                                const std::vector<std::vector<int32_t>>* segments) {
  const int64_t B = static_cast<int64_t>(rows.size());
  size_t T = 1;
  for (const auto& r : rows) T = std::max(T, r.size());
  std::vector<int32_t> ids(static_cast<size_t>(B) * T, pad_id), seg(static_cast<size_t>(B) * T, 0);
  std::vector<float> tok(static_cast<size_t>(B) * T, 0.f), key(static_cast<size_t>(B) * T, -1e9f);
  for (size_t b = 0; b < rows.size(); ++b) {
    for (size_t t = 0; t < rows[b].size(); ++t) {
      ids[b * T + t] = rows[b][t];
      tok[b * T + t] = 1.f;
      key[b * T + t] = 0.f;
      if (segments) seg[b * T + t] = (*segments)[b][t];
    }
  }
  const Shape s{B, static_cast<int64_t>(T)};
  EncoderInput in;
  in.ids = Tensor::from_ids(ids, s, d);
  if (segments) in.segments = Tensor::from_ids(seg, s, d);
  in.token_mask = Tensor::from_vector(tok, s, d);
  in.key_mask = Tensor::from_vector(key, s, d);
  return in;
}

Embeddings::Embeddings(int64_t vocab, int64_t max_len, int64_t segments, int64_t d_model, float dropout, float ln_eps)
    : token(register_parameter("token", {vocab, d_model}, Init::normal(0.02f))),
      position(register_parameter("position", {max_len, d_model}, Init::normal(0.02f))),
      ln(register_module("ln", std::make_unique<LayerNorm>(d_model, ln_eps))),
      dropout_(dropout) {
  if (segments > 0) segment = &register_parameter("segment", {segments, d_model}, Init::normal(0.02f));
}

Tensor Embeddings::forward(const EncoderInput& in) const {
  const int64_t T = in.ids.dim(1);
  HR_CHECK(T <= position.dim(0), "sequence of " + std::to_string(T) + " tokens is longer than model.max_len = " +
                                     std::to_string(position.dim(0)));
  Tensor x = add(embedding(token, in.ids), slice(position, 0, 0, T));  // (B, T, D) + (T, D)
  // an input without segment ids is all segment 0, as BERT's default token_type_ids (a single-text classifier)
  if (segment) x = add(x, in.segments.defined() ? embedding(*segment, in.segments) : slice(*segment, 0, 0, 1));
  return dropout(ln.forward(x), dropout_, training());
}

EncoderModel::EncoderModel(const Config& m, const ModelDims& dims) : type_(m.get<std::string>("type")), dims_(dims) {
  d_model_ = m.get_positive("d_model");
  max_len_ = m.get_positive("max_len");
  pre_norm_ = m.get_choice("norm", {"pre", "post"}, "pre") == "pre";
  const float dropout = m.get_fraction("dropout", 0.1f);
  const float ln_eps = m.get<float>("layer_norm_eps", 1e-5f);
  dims_.segments = m.get<int64_t>("segments", dims.segments);
  if (dims_.segments < 0) m.fail("segments", "must be >= 0");
  HR_CHECK(dims.vocab_size > 0, "build_model: vocabulary size unknown");

  LayerDefaults d;
  d.d_model = d_model_;
  d.ffn_dim = m.get_positive("ffn_dim", 4 * d_model_);
  d.dropout = dropout;
  d.attention_dropout = m.get_fraction("attention_dropout", dropout);
  // headroom has always dropped the feed-forward's hidden layer at `dropout`; BERT does not (import-hf writes 0)
  d.activation_dropout = m.get_fraction("activation_dropout", dropout);
  d.layer_norm_eps = ln_eps;
  d.pre_norm = pre_norm_;

  embeddings_ = &register_module("embeddings", std::make_unique<Embeddings>(dims.vocab_size, max_len_, dims_.segments,
                                                                            d_model_, dropout, ln_eps));
  const std::vector<Config> groups = m.child("layers").items();
  if (groups.empty()) m.fail("layers", "needs at least one layer group");
  for (const Config& g : groups) {
    const int64_t repeat = g.get_positive("repeat", 1);
    const std::string type = g.get<std::string>("type", "encoder");
    for (int64_t r = 0; r < repeat; ++r) {
      d.layer_index = static_cast<int64_t>(layers_.size());
      auto layer = build_layer(type, g, d);
      const LayerStats st = layer->stats(1);
      if (st.heads > 0 || type == "encoder") d.prev_heads = st.passes_logits ? st.heads : 0;
      layers_.push_back(&register_module("layers." + std::to_string(layers_.size()), std::move(layer)));
    }
  }
  if (pre_norm_) final_ln_ = &register_module("final_ln", std::make_unique<LayerNorm>(d_model_, ln_eps));
  std::unique_ptr<TaskHead> head =
      build_head(m, type_, HeadSettings{d_model_, dropout, dims_, ln_eps, &embeddings_->token});
  const std::string head_name = head->name();
  head_ = &register_module(head_name, std::move(head));
}

Tensor EncoderModel::hidden_states(const EncoderInput& in, std::vector<Tensor>* attention_maps) {
  const AutocastScope autocast(precision_, parameters());
  LayerContext ctx;
  ctx.key_mask = in.key_mask;
  ctx.attention_maps = attention_maps;
  Tensor x = embeddings_->forward(in);
  for (size_t i = 0; i < layers_.size(); ++i) {
    ctx.layer_index = static_cast<int64_t>(i);
    x = layers_[i]->forward(x, ctx);
  }
  return final_ln_ ? final_ln_->forward(x) : x;
}

Tensor EncoderModel::forward(const EncoderInput& in, std::vector<Tensor>* attention_maps) {
  const AutocastScope autocast(precision_, parameters());
  return head_->forward(hidden_states(in, attention_maps), in);  // hidden (B, T, D)
}

Tensor EncoderModel::penalty() const {
  Tensor total;
  for (Layer* l : layers_) {
    Tensor p = l->penalty();
    if (p.defined()) total = total.defined() ? add(total, p) : p;
  }
  return total;
}

std::vector<LayerStats> EncoderModel::layer_stats(int64_t seq_len) const {
  std::vector<LayerStats> out;
  for (Layer* l : layers_) out.push_back(l->stats(seq_len));
  return out;
}

std::unique_ptr<EncoderModel> build_model(const Config& model, const ModelDims& dims) {
  check_model_fits(model, dims);  // before a byte of it is allocated
  std::unique_ptr<EncoderModel> m;
  try {
    m = std::make_unique<EncoderModel>(model, dims);
  } catch (const std::bad_alloc&) {  // within the machine's memory, but not within what is free (or allowed) now
    fail_model_size(model, dims, "allocating them ran out of memory");
  }
  model.check_all_read();
  return m;
}

std::unique_ptr<EncoderModel> build_model_shapes(const Config& model, const ModelDims& dims) {
  check_model_countable(model, dims);
  const ShapesOnly shapes;
  auto m = std::make_unique<EncoderModel>(model, dims);
  model.check_all_read();
  return m;
}

}  // namespace hr
