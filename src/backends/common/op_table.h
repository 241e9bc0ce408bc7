// A backend's ops, declared once: for each IR op the function that builds its steps and the conditions under which
// the backend runs it (dtypes, ranks, constant operands). Backend::supports() and the plan builder both read the
// table, so what a backend claims and what it builds cannot drift apart.
#pragma once

#include <fmt/format.h>

#include <array>
#include <initializer_list>
#include <string>

#include "graph/ir.h"

namespace steadyocr::common {

// Whether the backend runs this node of an op it declares; when not, `why` (if given) says why.
using OpCheck = bool (*)(const graph::Node& n, std::string* why);

// For OpChecks: declines with `reason`.
inline bool decline(std::string* why, const char* reason) {
  if (why) *why = reason;
  return false;
}
inline bool rank_is(const graph::Value* v, size_t r) {
  return v && v->shape.size() == r;
}
// A Resize the device backends' kernels run: NCHW, only the two trailing axes resized.
inline bool resize_of_trailing_axes(const graph::Node& n, std::string* why) {
  if (!rank_is(n.input(0), 4) || !rank_is(n.output(), 4)) return decline(why, "only 4-D (NCHW) resize");
  if (n.input(0)->shape[0] != n.output()->shape[0] || n.input(0)->shape[1] != n.output()->shape[1]) {
    return decline(why, "only the two trailing axes may be resized");
  }
  return true;
}

template <typename Build>
class OpTable {
 public:
  struct Entry {
    Build build = nullptr;
    OpCheck check = nullptr;  // null: every node of the op
  };
  // Ops that share a builder and a check.
  struct Row {
    std::initializer_list<graph::OpKind> ops;
    Build build;
    OpCheck check = nullptr;
  };

  // `backend` names the backend in reasons ("the cpu backend has no kernel for Gather"). A check that every node
  // must pass before its op's own (e.g. a rank limit) goes in `common_check`.
  OpTable(const char* backend, std::initializer_list<Row> rows, OpCheck common_check = nullptr)
      : backend_(backend), common_check_(common_check) {
    for (const Row& r : rows) {
      for (graph::OpKind op : r.ops) entries_[static_cast<size_t>(op)] = Entry{r.build, r.check};
    }
  }

  // The entry for `op`, or null when the backend does not declare it.
  const Entry* find(graph::OpKind op) const {
    const auto i = static_cast<size_t>(op);
    return i < entries_.size() && entries_[i].build ? &entries_[i] : nullptr;
  }

  // Whether the backend declares the node's op and runs this node of it.
  bool supports(const graph::Node& n, std::string* why = nullptr) const {
    const Entry* e = find(n.op);
    if (!e) {
      if (why) *why = fmt::format("the {} backend has no kernel for {}", backend_, graph::op_name(n.op));
      return false;
    }
    if (common_check_ && !common_check_(n, why)) return false;
    return !e->check || e->check(n, why);
  }

 private:
  const char* backend_;
  OpCheck common_check_;
  std::array<Entry, static_cast<size_t>(graph::OpKind::kCount)> entries_{};
};

}  // namespace steadyocr::common
