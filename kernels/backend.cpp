#include "kernels/backend.h"

#include "kernels/base/error.h"
#include "kernels/cpu/cpu_backend.h"
#ifdef HR_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace hr {

bool cuda_available() {
#ifdef HR_WITH_CUDA
  return cuda_device_present();
#else
  return false;
#endif
}

Backend& backend(Device d) {
  if (d == Device::CPU) return cpu_backend();
#ifdef HR_WITH_CUDA
  return cuda_backend();
#else
  throw Error("device 'cuda' requested, but this build of headroom has no CUDA backend "
              "(configure with -Dcuda=enabled on a machine with nvcc and cuBLAS)");
#endif
}

}  // namespace hr
