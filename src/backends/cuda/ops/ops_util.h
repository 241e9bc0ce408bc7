// Helpers shared by the op builders.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <vector>

#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/plan.h"
#include "backends/cuda/plan_builder.h"
#include "graph/ir.h"

namespace steadyocr::cuda {

// The elementwise instruction for a fused activation; false for kNone.
bool activation_instr(const graph::Activation& act, k::EwInstr* out);

// Axis in [-rank, rank) to [0, rank); false when out of range.
bool normalize_axis(int64_t axis, int64_t rank, int64_t* out);

inline bool is_float_type(DType t) {
  return t == DType::kF32 || t == DType::kF16;
}

// Whether every computed (non-constant) input and every output of the node is a float tensor.
bool float_tensors_only(const graph::Node& n);

// Copies between strided views (transpose, slice, concat, pad); several copies run in order in one step.
class CopyStep : public Step {
 public:
  struct View {
    BufRef src, dst;
    size_t src_offset_elems = 0, dst_offset_elems = 0;  // first element of each view
    Shape shape;
    std::vector<int64_t> src_strides, dst_strides;  // elements
  };
  explicit CopyStep(int elem_size) : elem_size_(elem_size) {}
  void add(View v) { views_.push_back(std::move(v)); }
  Status enqueue(const ExecContext& ctx) const override;
  Status bind(const Bindings& b) override;
  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override;
  unsigned calls() const override { return kCallsOwnKernels; }

 private:
  int elem_size_;
  std::vector<View> views_;
  std::vector<k::CopyParams> params_;
};

// One launch of an own kernel: `bind` resolves pointers into the launch parameters, `launch` enqueues it.
class KernelStep : public Step {
 public:
  using BindFn = std::function<void(const Bindings&)>;
  using LaunchFn = std::function<cudaError_t(cudaStream_t)>;
  KernelStep(std::vector<BufRef> reads, std::vector<BufRef> writes, BindFn bind, LaunchFn launch)
      : reads_(std::move(reads)), writes_(std::move(writes)), bind_(std::move(bind)), launch_(std::move(launch)) {}
  Status enqueue(const ExecContext& ctx) const override;
  Status bind(const Bindings& b) override {
    bind_(b);
    return Status::ok();
  }
  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->insert(reads->end(), reads_.begin(), reads_.end());
    writes->insert(writes->end(), writes_.begin(), writes_.end());
  }
  unsigned calls() const override { return kCallsOwnKernels; }

 private:
  std::vector<BufRef> reads_, writes_;
  BindFn bind_;
  LaunchFn launch_;
};

}  // namespace steadyocr::cuda
