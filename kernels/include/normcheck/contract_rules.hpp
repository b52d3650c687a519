// The contract's rules, one catalog: each rule's id ("x.offset"), the argument a rejection names
// and the sentence of abi.h it enforces, with the calls it applies to. The shipped checker
// (kernels/api/contract.cpp) starts each message with "[id] ", the contract property's breakers
// cite the id they break, and the contract fuzzer's seeds and tags ("forward rejects x.offset")
// are named by it; harness_test holds the three to this list. The fuzzers' model of the rules
// stays an implementation of its own: only the vocabulary is shared.
// Header-only, so a plugin, a fuzz target or a test uses it without linking.
#pragma once

#include <cstdint>
#include <string_view>

namespace nc {

/// the calls a rule applies to
enum : std::uint8_t { rule_forward = 1, rule_backward = 2 };

struct contract_rule {
  std::string_view id;        ///< "x.offset": the argument, then the kind of rule
  std::string_view argument;  ///< what a rejection names in quotes ('x', or a field of it)
  std::string_view sentence;  ///< the rule, as abi.h states it
  std::uint8_t calls;         ///< rule_forward, rule_backward or both
  /// the contract fuzzer draws calls that break it (its tags name it); the version-3 rules of
  /// the variants' operands are broken by the contract property only, on kernels that declare
  /// a variant (the fuzz input places the plain operator's operands)
  bool fuzzed = true;
};

inline constexpr contract_rule contract_rules[] = {
    {"m", "m", "M must be >= 0", rule_forward | rule_backward},
    {"n", "n", "N must be >= 1", rule_forward | rule_backward},
    {"epsilon", "epsilon", "epsilon must be finite and >= 0", rule_forward},
    {"x.dtype", "x", "x must be fp32, fp16 or bf16", rule_forward | rule_backward},
    {"gamma.dtype", "gamma", "gamma must be fp32, fp16 or bf16", rule_forward | rule_backward},
    {"gamma.dtype_pair", "gamma", "gamma must be in x's dtype or fp32", rule_forward | rule_backward},
    {"y.dtype", "y", "y must be in x's dtype (a quantized output: the codes' dtype)", rule_forward},
    {"dy.dtype", "dy", "dy must be in x's dtype", rule_backward},
    {"dx.dtype", "dx", "dx must be in x's dtype", rule_backward},
    {"dgamma.dtype", "dgamma", "dgamma must be in gamma's dtype", rule_backward},
    {"r.dtype", "r", "r must be fp32", rule_forward | rule_backward},
    {"x.null", "x", "x must point to its elements (non-NULL when it has any)", rule_forward | rule_backward},
    {"x.offset", "x", "x.offset must be >= 0", rule_forward | rule_backward},
    {"x.col_stride", "x", "x.col_stride must be >= 1", rule_forward | rule_backward},
    {"x.row_stride", "x", "x.row_stride must be >= 1 when M > 1", rule_forward | rule_backward},
    {"x.distinct", "x", "x's elements must be distinct (rows side by side, or columns; a per-head view's heads too)", rule_forward | rule_backward},
    {"x.overflow", "x", "no element index of x may overflow int64", rule_forward | rule_backward},
    {"gamma.null", "gamma", "gamma must point to its elements (non-NULL when it has any)", rule_forward | rule_backward},
    {"gamma.offset", "gamma", "gamma.offset must be >= 0", rule_forward | rule_backward},
    {"gamma.stride", "gamma", "gamma.stride must be >= 1 when it has more than one entry", rule_forward | rule_backward},
    {"gamma.overflow", "gamma", "no element index of gamma may overflow int64", rule_forward | rule_backward},
    {"y.null", "y", "y must point to its elements (non-NULL when it has any)", rule_forward},
    {"y.offset", "y", "y.offset must be >= 0", rule_forward},
    {"y.col_stride", "y", "y.col_stride must be >= 1", rule_forward},
    {"y.row_stride", "y", "y.row_stride must be >= 1 when M > 1", rule_forward},
    {"y.distinct", "y", "y's elements must be distinct (rows side by side, or columns)", rule_forward},
    {"y.overflow", "y", "no element index of y may overflow int64", rule_forward},
    {"r.null", "r", "r must point to its elements (non-NULL when it has any)", rule_forward | rule_backward},
    {"r.offset", "r", "r.offset must be >= 0", rule_forward | rule_backward},
    {"r.stride", "r", "r.stride must be >= 1 when it has more than one entry", rule_forward | rule_backward},
    {"r.overflow", "r", "no element index of r may overflow int64", rule_forward | rule_backward},
    {"dy.null", "dy", "dy must point to its elements (non-NULL when it has any)", rule_backward},
    {"dy.offset", "dy", "dy.offset must be >= 0", rule_backward},
    {"dy.col_stride", "dy", "dy.col_stride must be >= 1", rule_backward},
    {"dy.row_stride", "dy", "dy.row_stride must be >= 1 when M > 1", rule_backward},
    {"dy.distinct", "dy", "dy's elements must be distinct (rows side by side, or columns)", rule_backward},
    {"dy.overflow", "dy", "no element index of dy may overflow int64", rule_backward},
    {"dx.null", "dx", "dx must point to its elements (non-NULL when it has any)", rule_backward},
    {"dx.offset", "dx", "dx.offset must be >= 0", rule_backward},
    {"dx.col_stride", "dx", "dx.col_stride must be >= 1", rule_backward},
    {"dx.row_stride", "dx", "dx.row_stride must be >= 1 when M > 1", rule_backward},
    {"dx.distinct", "dx", "dx's elements must be distinct (rows side by side, or columns)", rule_backward},
    {"dx.overflow", "dx", "no element index of dx may overflow int64", rule_backward},
    {"dgamma.null", "dgamma", "dgamma must point to its elements (non-NULL when it has any)", rule_backward},
    {"dgamma.offset", "dgamma", "dgamma.offset must be >= 0", rule_backward},
    {"dgamma.stride", "dgamma", "dgamma.stride must be >= 1 when it has more than one entry", rule_backward},
    {"dgamma.overflow", "dgamma", "no element index of dgamma may overflow int64", rule_backward},
    {"y.overlap", "y", "y, an output, must share no byte with any other operand", rule_forward},
    {"r.overlap", "r", "r, an output, must share no byte with any other operand", rule_forward},
    {"dx.overlap", "dx", "dx, an output, must share no byte with any other operand", rule_backward},
    {"dgamma.overlap", "dgamma", "dgamma, an output, must share no byte with any other operand", rule_backward},
    {"workspace_bytes", "workspace_bytes", "workspace_bytes must be >= what workspace_size reports", rule_backward},
    {"workspace.null", "workspace", "the workspace must be non-NULL when workspace_size reports > 0", rule_backward},
    {"workspace.align", "workspace", "the workspace must be 16-byte aligned", rule_backward},
    {"workspace.overlap", "workspace", "the workspace, an output, must share no byte with any operand", rule_backward},
    // version 3: the operation and a residual add's operands (abi.h "Variants")
    {"op.residual", "op.residual", "op.residual must be an nc_residual (NONE, ROUNDED or FP32)", rule_forward | rule_backward, false},
    {"op.in_place", "op.in_place", "op.in_place must be 0, or 1 with a residual add", rule_forward | rule_backward, false},
    {"op.weight_offset", "op.weight_offset", "op.weight_offset must be finite", rule_forward | rule_backward, false},
    {"residual.dtype", "residual", "residual must be in x's dtype", rule_forward, false},
    {"residual.null", "residual", "residual must point to its elements (non-NULL when it has any)", rule_forward, false},
    {"residual.offset", "residual", "residual.offset must be >= 0", rule_forward, false},
    {"residual.col_stride", "residual", "residual.col_stride must be >= 1", rule_forward, false},
    {"residual.row_stride", "residual", "residual.row_stride must be >= 1 when M > 1", rule_forward, false},
    {"residual.distinct", "residual", "residual's elements must be distinct (rows side by side, or columns)", rule_forward, false},
    {"residual.overflow", "residual", "no element index of residual may overflow int64", rule_forward, false},
    {"residual_out.dtype", "residual_out", "residual_out must be in x's dtype", rule_forward, false},
    {"residual_out.null", "residual_out", "residual_out must point to its elements (non-NULL when it has any)", rule_forward, false},
    {"residual_out.offset", "residual_out", "residual_out.offset must be >= 0", rule_forward, false},
    {"residual_out.col_stride", "residual_out", "residual_out.col_stride must be >= 1", rule_forward, false},
    {"residual_out.row_stride", "residual_out", "residual_out.row_stride must be >= 1 when M > 1", rule_forward, false},
    {"residual_out.distinct", "residual_out", "residual_out's elements must be distinct (rows side by side, or columns)", rule_forward, false},
    {"residual_out.overflow", "residual_out", "no element index of residual_out may overflow int64", rule_forward, false},
    {"residual_out.overlap", "residual_out", "residual_out, an output, must share no byte with any other operand (in place: it is residual)", rule_forward, false},
    {"residual_out.in_place", "residual_out", "in place, residual_out must be the residual operand itself (data, dtype, offset, strides)", rule_forward, false},
    {"residual.overlap", "residual", "in place, residual (then an output) must share no byte with any other operand", rule_forward, false},
    {"residual_grad.dtype", "residual_grad", "residual_grad must be in x's dtype", rule_backward, false},
    {"residual_grad.null", "residual_grad", "residual_grad must point to its elements (non-NULL when it has any)", rule_backward, false},
    {"residual_grad.offset", "residual_grad", "residual_grad.offset must be >= 0", rule_backward, false},
    {"residual_grad.col_stride", "residual_grad", "residual_grad.col_stride must be >= 1", rule_backward, false},
    {"residual_grad.row_stride", "residual_grad", "residual_grad.row_stride must be >= 1 when M > 1", rule_backward, false},
    {"residual_grad.distinct", "residual_grad", "residual_grad's elements must be distinct (rows side by side, or columns)", rule_backward, false},
    {"residual_grad.overflow", "residual_grad", "no element index of residual_grad may overflow int64", rule_backward, false},
    // version 3: per-head rows (op.rows = NC_ROWS_HEADS)
    {"op.rows", "op.rows", "op.rows must be an nc_rows (MATRIX, HEADS or BATCHES)", rule_forward | rule_backward, false},
    {"head.heads", "head.heads", "head.heads must be >= 1 and divide m", rule_forward | rule_backward, false},
    {"x.head_stride", "head.x", "head.x must be >= 1 where x has two heads", rule_forward | rule_backward, false},
    {"y.head_stride", "head.y", "head.y must be >= 1 where y has two heads", rule_forward, false},
    {"dy.head_stride", "head.dy", "head.dy must be >= 1 where dy has two heads", rule_backward, false},
    {"dx.head_stride", "head.dx", "head.dx must be >= 1 where dx has two heads", rule_backward, false},
    {"residual.head_stride", "head.residual", "head.residual must be >= 1 where residual has two heads", rule_forward, false},
    {"residual_out.head_stride", "head.residual_out", "head.residual_out must be >= 1 where residual_out has two heads", rule_forward, false},
    {"residual_grad.head_stride", "head.residual_grad", "head.residual_grad must be >= 1 where residual_grad has two heads", rule_backward, false},
    // a 4-D view [batches, tokens, heads, N] (op.rows = NC_ROWS_BATCHES)
    {"head.tokens", "head.tokens", "head.tokens must be >= 1, heads x tokens dividing m", rule_forward | rule_backward, false},
    {"x.batch_stride", "head.batch.x", "head.batch.x must be >= 1 where x has two batches", rule_forward | rule_backward, false},
    {"y.batch_stride", "head.batch.y", "head.batch.y must be >= 1 where y has two batches", rule_forward, false},
    {"dy.batch_stride", "head.batch.dy", "head.batch.dy must be >= 1 where dy has two batches", rule_backward, false},
    {"dx.batch_stride", "head.batch.dx", "head.batch.dx must be >= 1 where dx has two batches", rule_backward, false},
    {"residual.batch_stride", "head.batch.residual", "head.batch.residual must be >= 1 where residual has two batches", rule_forward, false},
    {"residual_out.batch_stride", "head.batch.residual_out", "head.batch.residual_out must be >= 1 where residual_out has two batches", rule_forward, false},
    {"residual_grad.batch_stride", "head.batch.residual_grad", "head.batch.residual_grad must be >= 1 where residual_grad has two batches", rule_backward, false},
    // version 3: a quantized output (op.quant != NC_QUANT_NONE) and its scale operand
    {"op.quant", "op.quant", "op.quant must be an nc_quant; a backward takes none but NC_QUANT_NONE", rule_forward | rule_backward, false},
    {"op.scale", "op.scale", "op.scale must be an nc_scale (STATIC, PER_TOKEN or PER_GROUP)", rule_forward, false},
    {"op.apply", "op.apply", "op.apply must be an nc_scale_apply (RECIPROCAL or DIVIDE)", rule_forward, false},
    {"op.group", "op.group", "op.group must be >= 1 and divide N for per-group scales", rule_forward, false},
    {"op.scale_floor", "op.scale_floor", "op.scale_floor must be finite and >= 0 for dynamic scales", rule_forward, false},
    {"scale.dtype", "scale", "scale must be fp32", rule_forward, false},
    {"scale.null", "scale", "scale must point to its elements (non-NULL)", rule_forward, false},
    {"scale.offset", "scale", "scale.offset must be >= 0", rule_forward, false},
    {"scale.col_stride", "scale", "scale.col_stride must be >= 1", rule_forward, false},
    {"scale.row_stride", "scale", "scale.row_stride must be >= 1 when it has two rows", rule_forward, false},
    {"scale.distinct", "scale", "scale's elements must be distinct (rows side by side, or columns)", rule_forward, false},
    {"scale.overflow", "scale", "no element index of scale may overflow int64", rule_forward, false},
    {"scale.overlap", "scale", "a dynamic scale, an output, must share no byte with any other operand", rule_forward, false},
};

/// the rule of an id, or null
constexpr const contract_rule* find_contract_rule(std::string_view id) {
  for (const contract_rule& r : contract_rules)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace nc
