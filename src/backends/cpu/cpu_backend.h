// The oneDNN CPU backend: convolutions, deconvolutions, matmuls and pooling on oneDNN (blocked layouts,
// fused post-ops, weights packed once), everything else on our own vectorised kernels. Threads come from
// OpenMP, which oneDNN shares, sized by core/parallel.h set_num_threads.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace steadyocr {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace steadyocr
