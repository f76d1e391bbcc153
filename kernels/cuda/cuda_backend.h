// The CUDA backend: cuBLAS for matmuls, kernels over the functors of kernels/math for the rest. Built with -Dcuda.
#pragma once

#include "kernels/backend.h"

namespace hr {
// Throws hr::Error with a clear message when no CUDA device is present.
Backend& cuda_backend();
bool cuda_device_present();
}
