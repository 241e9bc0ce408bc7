// A prepared plan: an ordered list of steps over logical buffers (placed in one arena by a liveness plan),
// plus the host-side description of elementwise programs that the fusion pass merges.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr::cuda {

// A byte range inside a logical buffer (arena slot, weight, graph input/output).
struct BufRef {
  int buf = -1;
  size_t offset = 0;
  bool valid() const { return buf >= 0; }
  bool operator==(const BufRef&) const = default;
};

// A value as stored on the device: contiguous, row-major.
struct DevTensor {
  BufRef ref;
  DType dtype = DType::kF32;
  Shape shape;
  int64_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

k::Dt to_kdt(DType t);

// Device addresses of every logical buffer, known once the arena is placed.
struct Bindings {
  std::vector<char*> bases;
  void* ptr(const BufRef& r) const { return r.valid() ? bases[r.buf] + r.offset : nullptr; }
};

// Per-run state handed to each step (the leased lane's stream and handles, the plan's cuDNN workspace).
struct ExecContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  void* workspace = nullptr;  // cuDNN workspace (sized by the plan)
  size_t workspace_bytes = 0;
};

// The libraries a step calls when it is enqueued (bits of Step::calls()): the step runner's fault hook fails the
// first step that calls the library an injected fault belongs to.
enum StepCalls : unsigned { kCallsOwnKernels = 1u << 0, kCallsCudnn = 1u << 1, kCallsCublas = 1u << 2 };

// An elementwise program before binding: inputs broadcast into the output index space `shape`.
struct EwProgram {
  struct Input {
    BufRef ref;
    DType dtype = DType::kF32;
    Shape shape;  // as stored; broadcast NumPy-style to the program's shape
  };
  Shape shape;
  std::vector<Input> inputs;
  int acc_src = 0;
  std::vector<k::EwInstr> instrs;
  BufRef out;
  DType out_dtype = DType::kF32;

  // Whether input `i` is read with the output's own indexing (same shape).
  bool input_is_full(int i) const { return inputs[i].shape == shape; }
  // Fills launch parameters (collapsing dimensions); fails when the rank stays above kMaxRank.
  Status to_params(const Bindings& b, k::EwParams* p) const;
};

class Step {
 public:
  virtual ~Step() = default;
  // Enqueues this step's work on ctx.stream. Const: a bound plan is replayed (and captured) as is.
  virtual Status enqueue(const ExecContext& ctx) const = 0;
  // Resolves device pointers once the arena is placed.
  virtual Status bind(const Bindings& b) = 0;
  // Logical buffers read and written (for liveness).
  virtual void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const = 0;
  // The libraries enqueue() calls (StepCalls bits), known once the step is bound.
  virtual unsigned calls() const = 0;
  // The elementwise program this step ends with (elementwise steps, conv epilogues); null otherwise.
  virtual EwProgram* program() { return nullptr; }
  // Whether the step's program may be empty (a conv with nothing to add after it).
  std::string label;  // "Conv 'name'" for errors and profiles
};

// Runs an elementwise program (also used for casts that fusion can absorb).
class EwStep : public Step {
 public:
  explicit EwStep(EwProgram p) : prog_(std::move(p)) {}
  Status enqueue(const ExecContext& ctx) const override;
  Status bind(const Bindings& b) override { return prog_.to_params(b, &params_); }
  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override;
  unsigned calls() const override { return kCallsOwnKernels; }
  EwProgram* program() override { return &prog_; }

 private:
  EwProgram prog_;
  k::EwParams params_;
};

// Launch of an own kernel (k::launch_* returns the launch's cudaError_t), checked through the one macro.
#define SO_LAUNCH(expr) SO_GPU_CHECK(expr)

}  // namespace steadyocr::cuda
