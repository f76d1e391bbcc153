#include "train/run/gradient_reducer.h"

#include <cmath>

#include "framework/random.h"
#include "kernels/base/error.h"

namespace hr {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

GradientReducer::GradientReducer(Communicator& comm, const std::vector<Tensor>& params, FlatGradients& grads,
                                 double bucket_mb, bool overlap)
    : comm_(comm), grads_(grads), overlap_(overlap), params_(params) {
  HR_CHECK(bucket_mb > 0, "gradient reducer: bucket size must be > 0 MB");
  const int64_t bucket_elems = std::max<int64_t>(1, static_cast<int64_t>(bucket_mb * 1048576.0 / sizeof(float)));
  std::vector<int64_t> offset(params_.size() + 1, 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    index_[params_[i].impl()] = i;
    offset[i + 1] = offset[i] + params_[i].numel();
  }
  HR_CHECK(offset.back() == grads.numel(), "gradient reducer: parameters do not match the flat gradient buffer");
  bucket_of_.assign(params_.size(), 0);
  for (size_t i = params_.size(); i-- > 0;) {  // from the last parameter: backward's order
    if (buckets_.empty() || buckets_.back().end - buckets_.back().begin >= bucket_elems)
      buckets_.push_back(Bucket{offset[i + 1], offset[i + 1], 0});
    buckets_.back().begin = offset[i];
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
  writes_.assign(params_.size(), 0);
  expected_writes_.assign(params_.size(), 0);
  stats_.gradient_bytes = grads.numel() * static_cast<int64_t>(sizeof(float));
  stats_.buckets = static_cast<int>(buckets_.size());
}

GradientReducer::~GradientReducer() {
  if (observing_) set_backward_observer(previous_observer_);
}

LossReduction GradientReducer::reduce_loss(double share, bool finite) {
  double sum[2] = {finite ? share : 0.0, finite ? 0.0 : 1.0};  // share of the loss, replicas with a non-finite one
  comm_.all_reduce_host(sum, 2, ReduceOp::Sum);
  // a replica without rows in this micro-batch drew no dropout masks: every replica continues from the furthest
  // counter (the others all took the same), so random streams stay identical
  Generator& gen = global_generator();
  HR_CHECK(gen.offset < (uint64_t{1} << 53), "random counter beyond 2^53: cannot be agreed on exactly");
  double offset = static_cast<double>(gen.offset);
  comm_.all_reduce_host(&offset, 1, ReduceOp::Max);
  gen.offset = static_cast<uint64_t>(offset);
  return LossReduction{sum[1] == 0 ? sum[0] : std::nan(""), sum[1] == 0};
}

void GradientReducer::begin_last_backward() {
  if (!overlap_ || comm_.size() == 1) return;
  std::fill(writes_.begin(), writes_.end(), 0);
  for (Bucket& b : buckets_) b.remaining = 0;
  for (size_t i = 0; i < params_.size(); ++i)
    if (expected_writes_[i] > 0) ++buckets_[static_cast<size_t>(bucket_of_[i])].remaining;
  if (!learned_)  // the first step only counts: nothing starts before backward has ended
    for (Bucket& b : buckets_) b.remaining = 1 << 30;
  next_bucket_ = 0;
  written_since_node_.clear();
  previous_observer_ = set_backward_observer(this);
  observing_ = true;
}

void GradientReducer::leaf_gradient_written(const TensorImpl* leaf) {
  const auto it = index_.find(leaf);
  if (it == index_.end()) return;
  const size_t i = it->second;
  if (bucket_of_[i] < next_bucket_)
    throw Error("data parallel: the gradient of '" + params_[i].name() +
                "' was written after its bucket's all-reduce had started (backward wrote it more often than in the "
                "first step); set train.dp_overlap: false for this model");
  ++writes_[i];
  written_since_node_.push_back(i);
}

void GradientReducer::node_done() {
  if (learned_) {  // learned: a parameter is complete once backward wrote it as often as it did before
    for (size_t i : written_since_node_)
      if (writes_[i] == expected_writes_[i]) --buckets_[static_cast<size_t>(bucket_of_[i])].remaining;
    start_ready_buckets();
  }
  written_since_node_.clear();
  comm_.progress();
}

void GradientReducer::start_ready_buckets() {
  while (next_bucket_ < static_cast<int>(buckets_.size()) && buckets_[static_cast<size_t>(next_bucket_)].remaining <= 0) {
    const Bucket& b = buckets_[static_cast<size_t>(next_bucket_++)];
    comm_.start_all_reduce_sum(grads_.flat().data() + b.begin, b.end - b.begin);
  }
}

void GradientReducer::finish(FlatGradients& grads) {
  HR_CHECK(&grads == &grads_, "gradient reducer: finish() with another gradient buffer");
  if (observing_) {
    set_backward_observer(previous_observer_);
    observing_ = false;
    if (!learned_) expected_writes_ = writes_, learned_ = true;
  } else {
    next_bucket_ = 0;
  }
  if (comm_.size() == 1) return;
  const auto t = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) b.remaining = 0;
  start_ready_buckets();  // whatever backward did not complete (or everything, without overlap), in order
  comm_.finish_all_reduces();
  stats_.wait_s += seconds_since(t);
}

}  // namespace hr
