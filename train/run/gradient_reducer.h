// Data-parallel gradient averaging with PyTorch DDP's design (torch/csrc/distributed/c10d/reducer.cpp): the flat
// gradient buffer is cut into buckets of about `bucket_mb`, in reverse parameter order (the order backward produces
// them); during the backward of a step's last micro-batch a bucket's all-reduce starts as soon as every gradient in it
// is complete, and buckets start strictly in index order so that all ranks issue the same collectives in the same
// order, whatever their timing. When a parameter's gradient is complete is learned from the first step (how many
// times backward writes into it), as DDP's static graph; a parameter written again after its bucket started is an
// error, never a silently stale sum.
//
// Each replica's loss is weighted by its share of the global batch before backward, so the buckets are summed, not
// averaged: the result is the gradient of the global batch's mean loss however the batch is split.
#pragma once

#include <chrono>
#include <unordered_map>
#include <vector>

#include "framework/autograd.h"
#include "framework/distributed/communicator.h"
#include "framework/flat_gradients.h"
#include "train/run/training_step.h"

namespace hr {

struct ReducerStats {
  double wait_s = 0;           // time spent waiting for gradient all-reduces after backward (not hidden by it)
  int64_t gradient_bytes = 0;  // bytes of one step's gradient (each rank sends 2(N-1)/N of it in a ring all-reduce)
  int buckets = 0;
};

class GradientReducer final : public GradientSync, private BackwardObserver {
 public:
  // `params` in the order of `grads` (FlatGradients made from the same list).
  GradientReducer(Communicator& comm, const std::vector<Tensor>& params, FlatGradients& grads, double bucket_mb,
                  bool overlap);
  ~GradientReducer() override;
  LossReduction reduce_loss(double share, bool finite) override;
  void begin_last_backward() override;
  void finish(FlatGradients& grads) override;
  ReducerStats& stats() { return stats_; }

 private:
  struct Bucket {
    int64_t begin = 0, end = 0;  // element range of the flat buffer
    int remaining = 0;           // parameters whose gradient is not complete yet in this backward
  };
  void leaf_gradient_written(const TensorImpl* leaf) override;
  void node_done() override;
  void start_ready_buckets();

  Communicator& comm_;
  FlatGradients& grads_;
  bool overlap_;
  std::vector<Tensor> params_;
  std::unordered_map<const TensorImpl*, size_t> index_;  // parameter -> position in params_
  std::vector<int> bucket_of_;                           // parameter -> bucket
  std::vector<Bucket> buckets_;
  std::vector<int> writes_, expected_writes_;            // per parameter: in this backward / in the first one
  bool learned_ = false;                                 // expected_writes_ holds the first step's counts
  std::vector<size_t> written_since_node_;
  int next_bucket_ = 0;  // buckets [0, next_bucket_) have been started
  bool observing_ = false;
  BackwardObserver* previous_observer_ = nullptr;
  ReducerStats stats_;
};

}  // namespace hr
