#include "framework/distributed/nccl_communicator.h"

#include <chrono>
#include <iostream>
#include <thread>

#include "kernels/backend.h"
#include "kernels/base/error.h"

namespace hr {

namespace {

void check_cuda(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) throw Error(std::string(call) + " failed: " + cudaGetErrorString(rc));
}
void check_nccl(ncclResult_t rc, const char* call) {
  if (rc != ncclSuccess) throw Error(std::string(call) + " failed: " + ncclGetErrorString(rc));
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi, int local_rank, double timeout_s)
    : mpi_(std::move(mpi)), timeout_s_(timeout_s) {
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  HR_CHECK(count > 0, "rank " + std::to_string(rank()) + ": no CUDA device for NCCL");
  // before the CUDA backend makes its context: the backend then lives on this rank's GPU
  device_ = local_rank % count;
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  ncclUniqueId id;
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  mpi_->broadcast_bytes(&id, sizeof id, 0);
  check_nccl(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(comm_);
  if (stream_) cudaStreamDestroy(stream_);
}

std::string NcclCommunicator::name() const {
  int v = 0;
  ncclGetVersion(&v);
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + " over " + mpi_->name() +
         ", GPU " + std::to_string(device_);
}

void NcclCommunicator::wait(const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) check_cuda(q, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) check_nccl(async, what.c_str());
    if (std::chrono::duration<double>(Clock::now() - start).count() > timeout_s_) {
      std::cerr << "rank " << rank() << " of " << size() << ": " << what << " did not complete within " << timeout_s_
                << " s (train.dp_timeout_s): another rank died or hangs; stopping the job\n";
      ncclCommAbort(comm_);
      comm_ = nullptr;
      MpiCommunicator::finalize(4, false);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// The gradients were written on the backend's stream: it is synchronised before NCCL reads them on its own stream.
void NcclCommunicator::broadcast(float* data, int64_t n, int root) {
  backend(Device::CUDA).synchronize();
  check_nccl(ncclBroadcast(data, data, static_cast<size_t>(n), ncclFloat32, root, comm_, stream_), "ncclBroadcast");
  wait("broadcast");
}

void NcclCommunicator::start_all_reduce_sum(float* data, int64_t n) {
  backend(Device::CUDA).synchronize();
  check_nccl(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
}

void NcclCommunicator::finish_all_reduces() { wait("gradient all-reduce"); }

}  // namespace hr
