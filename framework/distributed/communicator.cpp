// The factory, the launcher's environment, and the communicator of a process that runs alone.
#include "framework/distributed/communicator.h"

#include <cstdlib>

#include "kernels/base/error.h"

#ifdef HR_WITH_MPI
#include "framework/distributed/mpi_communicator.h"
#endif
#ifdef HR_WITH_NCCL
#include "framework/distributed/nccl_communicator.h"
#endif

namespace hr {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Open MPI's mpirun, MPICH/Intel MPI (PMI), and Slurm's srun set one of these for every process they start.
int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"})
    if (const int n = env_int(v, 0); n > 0) return n;
  return 0;
}

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "single process"; }
  void broadcast(float*, int64_t, int) override {}
  void start_all_reduce_sum(float*, int64_t) override {}
  void finish_all_reduces() override {}
  void all_reduce_host(double*, int64_t, ReduceOp) override {}
  void barrier() override {}
};

}  // namespace

int local_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"})
    if (const int r = env_int(v, -1); r >= 0) return r;
  return 0;
}

std::string rank_prefix() {
  if (launcher_world_size() <= 1) return "";
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const int r = env_int(v, -1); r >= 0) return "rank " + std::to_string(r) + ": ";
  return "";
}

std::unique_ptr<Communicator> make_communicator(Device d, double timeout_s) {
  const int world = launcher_world_size();
  if (world <= 1) return std::make_unique<SingleProcess>();
#ifdef HR_WITH_MPI
  auto mpi = std::make_unique<MpiCommunicator>(timeout_s);
  if (d == Device::CPU) return mpi;
#ifdef HR_WITH_NCCL
  return std::make_unique<NcclCommunicator>(std::move(mpi), local_rank(), timeout_s);
#else
  throw UsageError("data-parallel training on CUDA needs NCCL, and this headroom was built without it (NCCL is found "
                   "with the CUDA toolkit: meson setup -Dcuda=enabled -Dmpi=enabled)");
#endif
#else
  (void)d, (void)timeout_s;
  throw UsageError("started by an MPI launcher with " + std::to_string(world) +
                   " processes, but this headroom was built without MPI: install libopenmpi-dev and reconfigure "
                   "(meson setup --reconfigure build -Dmpi=enabled)");
#endif
}

void finalize_distributed(int exit_code, bool orderly) {
#ifdef HR_WITH_MPI
  MpiCommunicator::finalize(exit_code, orderly);
#else
  (void)exit_code, (void)orderly;
#endif
}

}  // namespace hr
