// Expansion of fused epilogues back into nodes (the inverse of graph/passes/fuse_epilogue.cpp).
#include <fmt/format.h>

#include "graph/ir.h"

namespace steadyocr::graph {

std::vector<Node*> expand_epilogue(Graph& g, Node* n) {
  std::vector<Node*> made;
  if (n->epilogue.empty()) return made;
  Epilogue e = std::move(n->epilogue);
  n->epilogue = Epilogue();
  Value* final_value = n->output();
  std::vector<Value*> operands(n->inputs.begin(), n->inputs.end());
  n->inputs.resize(e.original_inputs);
  Value* head = g.add_value(e.head, final_value->dtype, final_value->shape);
  n->outputs[0] = head;
  head->producer = n;
  std::vector<Value*> results;
  const Node* anchor = n;
  for (size_t i = 0; i < e.stages.size(); ++i) {
    EpilogueStage& st = e.stages[i];
    std::vector<Value*> ins;
    for (const EpilogueStage::Operand& o : st.operands) {
      switch (o.kind) {
        case EpilogueStage::Operand::Kind::kHead:
          ins.push_back(head);
          break;
        case EpilogueStage::Operand::Kind::kStage:
          ins.push_back(results.at(o.index));
          break;
        case EpilogueStage::Operand::Kind::kInput:
          ins.push_back(operands.at(o.index));
          break;
      }
    }
    Value* out = i + 1 == e.stages.size() ? final_value : g.add_value(st.value, final_value->dtype, final_value->shape);
    Node* m = g.add_node(st.op, st.node, std::move(ins), {out}, std::move(st.attrs));
    g.move_after(m, anchor);
    anchor = m;
    results.push_back(out);
    made.push_back(m);
  }
  return made;
}

size_t expand_epilogues(Graph& g) {
  std::vector<Node*> fused;
  for (const auto& n : g.nodes()) {
    if (!n->epilogue.empty()) fused.push_back(n.get());
  }
  for (Node* n : fused) expand_epilogue(g, n);
  return fused.size();
}

}  // namespace steadyocr::graph
