#include "framework/distributed/mpi_communicator.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <iostream>
#include <thread>

#include "kernels/base/error.h"

namespace hr {

namespace {

// MPI counts are int: larger buffers go in pieces of 2^30 elements.
constexpr int64_t kMaxCount = int64_t{1} << 30;

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string(call) + " failed: " + std::string(msg, static_cast<size_t>(len)));
}

}  // namespace

MpiCommunicator::MpiCommunicator(double timeout_s) : timeout_s_(timeout_s) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;  // only the main thread calls MPI; OpenMP workers never do
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // errors come back as codes that check() turns into exceptions naming the call, instead of aborting silently
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

std::string MpiCommunicator::name() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<size_t>(len));
  v = v.substr(0, v.find_first_of(",\n"));  // "Open MPI v4.1.4"
  return "MPI (" + v + "), " + std::to_string(size_) + " ranks";
}

void MpiCommunicator::wait(std::vector<MPI_Request>& requests, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (done) break;
    // spin briefly (a collective between busy ranks completes in microseconds), then sleep: a rank waiting for
    // rank 0's evaluation must not take the CPU that rank 0 needs
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (std::chrono::duration<double>(Clock::now() - start).count() > timeout_s_) {
      std::cerr << "rank " << rank_ << " of " << size_ << ": " << what << " did not complete within " << timeout_s_
                << " s (train.dp_timeout_s): another rank died, hangs, or stopped on an error; stopping the job\n";
      std::cerr.flush();
      MPI_Abort(MPI_COMM_WORLD, 4);
    }
  }
  requests.clear();
}

void MpiCommunicator::broadcast(float* data, int64_t n, int root) {
  std::vector<MPI_Request> r;
  for (int64_t at = 0; at < n; at += kMaxCount) {
    r.emplace_back();
    check(MPI_Ibcast(data + at, static_cast<int>(std::min(kMaxCount, n - at)), MPI_FLOAT, root, MPI_COMM_WORLD,
                     &r.back()),
          "MPI_Ibcast");
  }
  wait(r, "broadcast");
}

void MpiCommunicator::broadcast_bytes(void* data, int64_t bytes, int root) {
  HR_CHECK(bytes <= INT_MAX, "broadcast_bytes: too large");
  std::vector<MPI_Request> r(1);
  check(MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &r[0]), "MPI_Ibcast");
  wait(r, "broadcast");
}

void MpiCommunicator::start_all_reduce_sum(float* data, int64_t n) {
  for (int64_t at = 0; at < n; at += kMaxCount) {
    pending_.emplace_back();
    check(MPI_Iallreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kMaxCount, n - at)), MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD, &pending_.back()),
          "MPI_Iallreduce");
  }
}

void MpiCommunicator::progress() {
  if (pending_.empty()) return;
  int done = 0;  // MPI_Testall completes requests only when all are done: keep them until finish
  check(MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
  if (done) pending_.clear();
}

void MpiCommunicator::finish_all_reduces() { wait(pending_, "gradient all-reduce"); }

void MpiCommunicator::all_reduce_host(double* values, int64_t n, ReduceOp op) {
  HR_CHECK(n <= kMaxCount, "all_reduce_host: too many values");
  std::vector<MPI_Request> r(1);
  check(MPI_Iallreduce(MPI_IN_PLACE, values, static_cast<int>(n), MPI_DOUBLE, op == ReduceOp::Sum ? MPI_SUM : MPI_MAX,
                       MPI_COMM_WORLD, &r[0]),
        "MPI_Iallreduce");
  wait(r, "all-reduce of host values (the step's loss and flags)");
}

void MpiCommunicator::barrier() {
  std::vector<MPI_Request> r(1);
  check(MPI_Ibarrier(MPI_COMM_WORLD, &r[0]), "MPI_Ibarrier");
  wait(r, "barrier");
}

void MpiCommunicator::finalize(int exit_code, bool orderly) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!orderly && size > 1) {
    std::cerr.flush();
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
  MPI_Finalize();
}

}  // namespace hr
