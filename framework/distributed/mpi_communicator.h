// The Communicator over MPI (Open MPI): host buffers, non-blocking collectives polled with a deadline.
#pragma once

// the C API only: MPI's deprecated C++ bindings are not used
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <vector>

#include "framework/distributed/communicator.h"

namespace hr {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(double timeout_s);  // initialises MPI on first use
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override;
  void broadcast(float* data, int64_t n, int root) override;
  void start_all_reduce_sum(float* data, int64_t n) override;
  void progress() override;
  void finish_all_reduces() override;
  void all_reduce_host(double* values, int64_t n, ReduceOp op) override;
  void barrier() override;
  void broadcast_bytes(void* data, int64_t bytes, int root);  // NCCL's unique id
  static void finalize(int exit_code, bool orderly);  // see finalize_distributed

 private:
  // Polls until every request completes; past the deadline, names `what` and aborts the job.
  void wait(std::vector<MPI_Request>& requests, const std::string& what);
  double timeout_s_;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> pending_;
};

}  // namespace hr
