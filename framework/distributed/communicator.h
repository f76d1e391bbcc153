// The processes of a data-parallel job and the collectives its training step needs, as torch.distributed's process
// group: MPI between CPU processes (Open MPI; launched by mpirun), NCCL between GPUs (bootstrapped over MPI), or one
// process alone. Every method is collective: all ranks make the same calls in the same order. A collective that does
// not complete within the timeout (a rank died, hangs, or took another path) stops the job with a message naming the
// operation and the ranks, instead of hanging forever.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/base/device.h"

namespace hr {

enum class ReduceOp { Sum, Max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // e.g. "single process", "MPI (Open MPI v4.1.4), 2 ranks"

  // ---- buffers on the device this communicator serves (host memory for MPI, the rank's GPU for NCCL), in place
  virtual void broadcast(float* data, int64_t n, int root) = 0;
  // Starts a sum over ranks; finish_all_reduces() completes every started one. progress() lets started ones advance
  // (MPI moves data only inside its calls; the gradient reducer calls it between backward nodes).
  virtual void start_all_reduce_sum(float* data, int64_t n) = 0;
  virtual void progress() {}
  virtual void finish_all_reduces() = 0;

  // ---- host values, in place
  virtual void all_reduce_host(double* values, int64_t n, ReduceOp op) = 0;
  // Waits for every rank (e.g. while rank 0 evaluates or saves).
  virtual void barrier() = 0;
};

// The communicator of this process: MPI (or NCCL over MPI for Device::CUDA) when started by an MPI launcher and built
// with MPI, the single-process one otherwise. Initialises MPI once per process; later calls return the same ranks.
// `timeout_s` bounds every wait.
std::unique_ptr<Communicator> make_communicator(Device d, double timeout_s);

// This process's rank among the processes on its machine (0 without a launcher): picks its GPU.
int local_rank();
// "rank R: " in a job of several processes (for error messages, which every rank may print), "" otherwise.
std::string rank_prefix();

// Ends MPI where it was started: MPI_Finalize when the command returned (`orderly`: every rank reaches the same return
// together), MPI_Abort(exit_code) when it threw, since one rank may have failed alone and the others would wait for it.
// A no-op without MPI.
void finalize_distributed(int exit_code, bool orderly);

}  // namespace hr
