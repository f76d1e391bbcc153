#include "kernels/cpu/onednn_eltwise.h"

#include "kernels/base/error.h"

namespace hr {

namespace {

using dnnl::algorithm;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// The algorithm whose backward reads what the framework saved: the output.
algorithm algorithm_of(Unary op) {
  switch (op) {
    case Unary::Exp: return algorithm::eltwise_exp_use_dst_for_bwd;
    case Unary::Tanh: return algorithm::eltwise_tanh_use_dst_for_bwd;
    case Unary::Sigmoid: return algorithm::eltwise_logistic_use_dst_for_bwd;
    default: throw Error("oneDNN eltwise: unsupported op");
  }
}

dnnl::memory mem(const dnnl::memory::desc& md, const dnnl::engine& e, const float* p) {
  return dnnl::memory(md, e, const_cast<float*>(p));
}

}  // namespace

OneDnnEltwise::OneDnnEltwise() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

bool OneDnnEltwise::supports(Unary op) {
  return op == Unary::Exp || op == Unary::Tanh || op == Unary::Sigmoid;
}

OneDnnEltwise::Fwd& OneDnnEltwise::eltwise(Unary op, int64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Key key{static_cast<int>(op), n};
  auto it = eltwise_.find(key);
  if (it != eltwise_.end()) return it->second;
  const dnnl::memory::desc md({n}, dt::f32, tag::a);
  const algorithm alg = algorithm_of(op);
  dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, 0.f, 0.f), engine_);
  dnnl::eltwise_backward::primitive_desc bpd(dnnl::eltwise_backward::desc(alg, md, md, 0.f, 0.f), engine_, pd);
  return eltwise_.emplace(key, Fwd{pd, dnnl::eltwise_forward(pd), dnnl::eltwise_backward(bpd)}).first->second;
}

void OneDnnEltwise::forward(Unary op, const float* x, float* y, int64_t n) {
  Fwd& f = eltwise(op, n);
  const auto& md = f.pd.src_desc();
  f.prim.execute(stream_, {{DNNL_ARG_SRC, mem(md, engine_, x)}, {DNNL_ARG_DST, mem(md, engine_, y)}});
  stream_.wait();
}

void OneDnnEltwise::backward(Unary op, const float* y, const float* gy, float* gx, int64_t n) {
  Fwd& f = eltwise(op, n);
  const auto& md = f.pd.src_desc();
  f.bwd.execute(stream_, {{DNNL_ARG_DST, mem(md, engine_, y)},
                          {DNNL_ARG_DIFF_DST, mem(md, engine_, gy)},
                          {DNNL_ARG_DIFF_SRC, mem(md, engine_, gx)}});
  stream_.wait();
}

}  // namespace hr
