// optimize(): the fixed pass order, with the verifier after every pass and a per-step node count.
#include <fmt/format.h>

#include <functional>

#include "core/log.h"
#include "graph/passes/passes.h"
#include "graph/verifier.h"

namespace steadyocr::graph {
namespace {

// BN and affine folds feed each other (ConvTranspose -> Add(bias) -> BatchNorm needs the Add folded first,
// Conv -> BatchNorm -> Mul -> Add the BN first), so they run together to a fixpoint.
Result<bool> fold_conv_parameters(Graph& graph) {
  bool any = false;
  for (int round = 0; round < 8; ++round) {
    ASSIGN_OR_RETURN(bool bn, fold_batchnorm(graph));
    ASSIGN_OR_RETURN(bool affine, fold_conv_affine(graph));
    if (!bn && !affine) break;
    any = true;
  }
  return any;
}

}  // namespace

std::string PassReport::describe() const {
  std::string s = fmt::format("{} nodes", nodes_before);
  size_t prev = nodes_before;
  for (const Step& st : steps) {
    if (!st.changed) continue;
    s += fmt::format("; {}: {} -> {}", st.pass, prev, st.nodes_after);
    prev = st.nodes_after;
  }
  if (prev == nodes_before) s += " (no pass changed the graph)";
  return s;
}

Status optimize(Graph& graph, const PassOptions& options, PassReport* report) {
  using PassFn = std::function<Result<bool>(Graph&)>;
  struct Pass {
    const char* name;
    PassFn fn;
    bool enabled;
  };
  // Order matters: folding first exposes patterns; BN/affine folding leaves Conv -> activation chains that the
  // HardSwish fusion turns into single activations; residual before activation so Conv+Add+Relu fuses fully.
  const Pass passes[] = {
      {"fold constants", [&options](Graph& g) { return fold_constants(g, options); }, true},
      {"eliminate identities", eliminate_identities, true},
      {"Conv+BN/affine fold", fold_conv_parameters, options.fold_batchnorm},
      {"HardSwish fusion", fuse_hardswish, options.fuse_activations},
      {"LayerNorm fusion", fuse_layernorm, options.fuse_layernorm},
      // After the pattern fusions: HardSwish's "/6" feeding a pointwise conv would otherwise be folded away.
      {"Conv input affine fold", fold_conv_input_affine, options.fold_batchnorm},
      {"Conv+residual fusion", fuse_conv_residual, options.fuse_residual},
      {"Conv+activation fusion", fuse_conv_activation, options.fuse_activations},
      {"eliminate identities", eliminate_identities, true},
      // Last: the chains it takes must have reached their final form.
      {"epilogue fusion", [&options](Graph& g) { return fuse_epilogues(g, options); }, options.fuse_epilogues},
  };
  bool all_static = true;
  for (const auto& v : graph.values()) all_static = all_static && v->has_static_shape();
  VerifyOptions vo;
  vo.require_static_shapes = all_static;
  PassReport local;
  PassReport& r = report ? *report : local;
  r.nodes_before = graph.node_count();
  r.steps.clear();
  for (const Pass& p : passes) {
    if (!p.enabled) continue;
    auto changed = p.fn(graph);
    if (!changed.is_ok()) return changed.status().with_context(fmt::format("pass '{}'", p.name));
    if (options.verify_each) {
      Status s = verify(graph, vo);
      if (!s.is_ok()) return s.with_context(fmt::format("after pass '{}'", p.name));
    }
    r.steps.push_back({p.name, *changed, graph.node_count()});
  }
  log::debug("passes", "graph '{}': {}", graph.name(), r.describe());
  return Status::ok();
}

}  // namespace steadyocr::graph
