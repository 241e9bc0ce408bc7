// Elementwise chain fusion over the built steps: an elementwise step E whose accumulator reads a buffer that only
// E reads, written by the program of an earlier step P (an elementwise step or a conv epilogue) over the same index
// space, is appended to P's program; E's output becomes P's and the intermediate never reaches memory.
// One forward pass with usage maps updated as steps merge (plans have hundreds of steps; this runs per bucket).
#include <algorithm>
#include <set>
#include <vector>

#include "backends/cuda/plan_builder.h"

namespace steadyocr::cuda {
namespace {

// Steps reading and writing each buffer (buffer ids are dense), each list sorted and without repeats.
struct Usage {
  std::vector<std::vector<int>> readers, writers;
  std::vector<BufRef> r, w;  // collect()'s scratch
  static const std::vector<int>& of(const std::vector<std::vector<int>>& m, int buf) {
    static const std::vector<int> none;
    return buf >= 0 && static_cast<size_t>(buf) < m.size() ? m[static_cast<size_t>(buf)] : none;
  }
};

void add_to(std::vector<std::vector<int>>& m, int buf, int index) {
  if (buf < 0) return;
  if (static_cast<size_t>(buf) >= m.size()) m.resize(static_cast<size_t>(buf) + 1);
  auto& v = m[static_cast<size_t>(buf)];
  auto it = std::lower_bound(v.begin(), v.end(), index);
  if (it == v.end() || *it != index) v.insert(it, index);
}

void remove_from(std::vector<std::vector<int>>& m, int buf, int index) {
  if (buf < 0 || static_cast<size_t>(buf) >= m.size()) return;
  auto& v = m[static_cast<size_t>(buf)];
  auto it = std::lower_bound(v.begin(), v.end(), index);
  if (it != v.end() && *it == index) v.erase(it);
}

void add_step_usage(Usage& u, const Step& s, int index) {
  u.r.clear();
  u.w.clear();
  s.collect(&u.r, &u.w);
  for (const auto& x : u.r) add_to(u.readers, x.buf, index);
  for (const auto& x : u.w) add_to(u.writers, x.buf, index);
}

void remove_step_usage(Usage& u, const Step& s, int index) {
  u.r.clear();
  u.w.clear();
  s.collect(&u.r, &u.w);
  for (const auto& x : u.r) remove_from(u.readers, x.buf, index);
  for (const auto& x : u.w) remove_from(u.writers, x.buf, index);
}

// Last step index (< limit) writing `buf`; -1 when none (graph input or weight).
int last_writer_before(const Usage& u, int buf, int limit) {
  const std::vector<int>& v = Usage::of(u.writers, buf);
  auto w = std::lower_bound(v.begin(), v.end(), limit);
  if (w == v.begin()) return -1;
  return *std::prev(w);
}

bool try_merge(EwProgram& p, const EwProgram& e) {
  const EwProgram::Input& acc = e.inputs[e.acc_src];
  if (!(acc.ref == p.out) || acc.shape != p.shape || e.shape != p.shape) return false;
  for (const auto& ins : e.instrs) {
    if (ins.src == e.acc_src) return false;  // the intermediate is read again as an operand
  }
  std::vector<int> remap(e.inputs.size(), -1);
  std::vector<EwProgram::Input> added;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (static_cast<int>(i) == e.acc_src) continue;
    const auto& in = e.inputs[i];
    for (size_t j = 0; j < p.inputs.size(); ++j) {
      if (p.inputs[j].ref == in.ref && p.inputs[j].dtype == in.dtype && p.inputs[j].shape == in.shape) {
        remap[i] = static_cast<int>(j);
      }
    }
    if (remap[i] < 0) {
      remap[i] = static_cast<int>(p.inputs.size() + added.size());
      added.push_back(in);
    }
  }
  if (p.inputs.size() + added.size() > static_cast<size_t>(k::kEwMaxInputs) ||
      p.instrs.size() + e.instrs.size() > static_cast<size_t>(k::kEwMaxInstrs)) {
    return false;
  }
  p.inputs.insert(p.inputs.end(), added.begin(), added.end());
  for (k::EwInstr ins : e.instrs) {
    if (ins.src >= 0) ins.src = static_cast<int8_t>(remap[ins.src]);
    p.instrs.push_back(ins);
  }
  p.out = e.out;
  p.out_dtype = e.out_dtype;
  return true;
}

}  // namespace

int fuse_elementwise(std::vector<std::unique_ptr<Step>>& steps, const std::set<int>& pinned_buffers) {
  Usage u;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) add_step_usage(u, *steps[i], i);
  int fused = 0;
  for (int ei = 0; ei < static_cast<int>(steps.size()); ++ei) {
    if (!steps[ei] || !dynamic_cast<EwStep*>(steps[ei].get())) continue;
    EwProgram* e = steps[ei]->program();
    const int buf = e->inputs[e->acc_src].ref.buf;
    if (pinned_buffers.count(buf)) continue;
    const auto& writers = Usage::of(u.writers, buf);
    if (writers.size() != 1) continue;
    const int pi = writers.front();
    if (pi >= ei || !steps[pi]) continue;
    // Only E reads the intermediate (besides P itself: a conv's epilogue reads the conv's raw output).
    bool sole_reader = true;
    for (int r : Usage::of(u.readers, buf)) sole_reader = sole_reader && (r == ei || r == pi);
    if (!sole_reader) continue;
    EwProgram* p = steps[pi]->program();
    if (!p || !(p->out == e->inputs[e->acc_src].ref)) continue;
    // E's other inputs must be ready when P runs.
    bool ready = true;
    for (size_t i = 0; i < e->inputs.size() && ready; ++i) {
      if (static_cast<int>(i) == e->acc_src) continue;
      ready = last_writer_before(u, e->inputs[i].ref.buf, ei) < pi;
    }
    if (!ready) continue;
    EwProgram merged = *p;
    if (!try_merge(merged, *e)) continue;
    remove_step_usage(u, *steps[pi], pi);
    remove_step_usage(u, *steps[ei], ei);
    *p = merged;
    steps[pi]->label += " + " + steps[ei]->label;
    steps[ei].reset();
    add_step_usage(u, *steps[pi], pi);
    ++fused;
  }
  std::vector<std::unique_ptr<Step>> kept;
  kept.reserve(steps.size());
  for (auto& s : steps) {
    if (s) kept.push_back(std::move(s));
  }
  steps = std::move(kept);
  return fused;
}

}  // namespace steadyocr::cuda
