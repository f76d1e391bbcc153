// The CPU backend: oneDNN primitives (matmul, softmax, layer norm, eltwise) cached by shape, the rest in OpenMP loops
// over the functors of kernels/math.
#pragma once

#include "kernels/backend.h"

namespace hr {
Backend& cpu_backend();
}
