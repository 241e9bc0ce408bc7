// TEMPORARY: kernels not written yet (replaced file by file).
#include "backends/reference/kernels.h"

namespace steadyocr::reference {
#define SO_STUB(fn)                                                                           \
  Status fn(const graph::Node& node, const Inputs&, Outputs&) {                               \
    return unsupported(fmt::format("{}: reference kernel not written yet", node.describe())); \
  }
SO_STUB(conv_kernel)
SO_STUB(conv_transpose_kernel)
SO_STUB(batchnorm_kernel)
SO_STUB(global_avg_pool_kernel)
SO_STUB(avg_pool_kernel)
SO_STUB(max_pool_kernel)
SO_STUB(resize_kernel)
SO_STUB(matmul_kernel)
SO_STUB(softmax_kernel)
SO_STUB(reduce_mean_kernel)
SO_STUB(layernorm_kernel)
}  // namespace steadyocr::reference
