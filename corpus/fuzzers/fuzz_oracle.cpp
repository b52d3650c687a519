#include "fuzz_oracle.hpp"

#include <sstream>

#include "normcheck/oracles/compare.hpp"

namespace nc::fuzz {

namespace {

oracle::matrix_view matrix_of(const call_spec& c, const arena& a, int k) {
  const operand& o = c.ops[std::size_t(k)];
  return {a.host(o.base), oracle_type(o.dtype), o.offset, o.row_stride, o.col_stride};
}

oracle::vector_view vector_of(const call_spec& c, const arena& a, int k) {
  const operand& o = c.ops[std::size_t(k)];
  return {a.host(o.base), oracle_type(o.dtype), o.offset, o.col_stride};
}

// appends a failed comparison's first mismatches; matrix outputs name (row, col)
void report(std::ostringstream& out, const char* name, bool matrix, const oracle::comparison& got) {
  if (got.bound_failures == 0) return;
  out << (out.tellp() > 0 ? "; " : "") << name << ": " << got.bound_failures << " of " << got.compared
      << " element(s) outside the oracle's bound (max " << got.max_bound_units << " bounds)";
  std::size_t shown = 0;
  for (const oracle::mismatch& e : got.mismatches) {
    if (!e.bound_failed || shown++ == 4) continue;
    out << (shown == 1 ? ": " : ", ") << name;
    if (matrix) out << "(" << e.row << ", " << e.col << ")";
    else out << "[" << e.row << "]";
    out << " kernel " << e.got << " oracle " << e.oracle << " bound " << e.bound;
  }
}

}  // namespace

oracle::forward_problem forward_problem_of(const call_spec& c, const arena& a, const capabilities& declared) {
  oracle::forward_problem p{c.m, c.n, c.epsilon, matrix_of(c, a, op_x), vector_of(c, a, op_gamma),
                            oracle_type(c.ops[op_y].dtype)};
  p.rounds_normalized = declared.rounds_normalized();
  return p;
}

oracle::backward_problem backward_problem_of(const call_spec& c, const arena& a, const capabilities& declared) {
  oracle::backward_problem p{c.m,
                             c.n,
                             matrix_of(c, a, op_x),
                             vector_of(c, a, op_gamma),
                             matrix_of(c, a, op_dy),
                             c.epsilon,
                             oracle_type(c.ops[op_dx].dtype),
                             oracle_type(c.ops[op_dgamma].dtype)};
  p.rounds_gradients = declared.rounds_gradients();
  return p;
}

std::optional<std::string> compare_forward(const call_spec& c, const arena& a, const oracle::forward_result& want) {
  std::ostringstream out;
  report(out, "y", true, oracle::compare(matrix_of(c, a, op_y), c.m, c.n, want.y, want.y_bound, want.rows));
  if (c.writes(op_r))
    report(out, "r", false, oracle::compare(vector_of(c, a, op_r), c.m, want.r, want.r_bound, want.rows));
  if (out.tellp() == 0) return std::nullopt;
  return out.str();
}

std::optional<std::string> compare_backward(const call_spec& c, const arena& a, const oracle::backward_result& want) {
  std::ostringstream out;
  report(out, "dx", true, oracle::compare(matrix_of(c, a, op_dx), c.m, c.n, want.dx, want.dx_bound, want.rows));
  report(out, "dgamma", false,
         oracle::compare(vector_of(c, a, op_dgamma), c.n, want.dgamma, want.dgamma_bound, want.columns));
  if (out.tellp() == 0) return std::nullopt;
  return out.str();
}

}  // namespace nc::fuzz
