// The Communicator between GPUs: NCCL collectives on this rank's GPU, bootstrapped over MPI (rank 0's ncclUniqueId is
// broadcast), which also carries the host values and barriers. One GPU per rank, chosen by the rank on its machine.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>

#include "framework/distributed/mpi_communicator.h"

namespace hr {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi, int local_rank, double timeout_s);
  ~NcclCommunicator() override;
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  std::string name() const override;
  void broadcast(float* data, int64_t n, int root) override;
  void start_all_reduce_sum(float* data, int64_t n) override;
  void finish_all_reduces() override;
  void all_reduce_host(double* values, int64_t n, ReduceOp op) override { mpi_->all_reduce_host(values, n, op); }
  void barrier() override { mpi_->barrier(); }

 private:
  void wait(const std::string& what);  // polls the stream; past the deadline aborts the NCCL communicator and the job
  std::unique_ptr<MpiCommunicator> mpi_;
  double timeout_s_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace hr
