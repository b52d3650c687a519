/* normcheck kernel plugin ABI, version 3 (version-1 and version-2 plugins still load).
 *
 * A kernel under test is a shared library exporting one symbol:
 *
 *     const nc_plugin* normcheck_plugin(uint32_t abi_version);
 *
 * It returns NULL when it cannot serve that ABI version, else a table whose abi_version is
 * the version asked. The harness asks for NORMCHECK_ABI_VERSION (3) first, then for 2, then
 * for 1; a version-1 table is the version-2 table without its last three fields. Version 3
 * keeps the version-2 table and appends fields to the argument and capability structs (the
 * operation, see "Variants"): a version-2 plugin reads only the prefix it knows, and the
 * harness reads a plugin's version-3 capability fields only when it answered version 3.
 * Everything the harness needs goes through the returned function table: the calls, the workspace query,
 * the memory of the plugin's device and the text of the last error. The harness
 * never links a kernel, so the shipped kernels, the seeded mutants and a user's own
 * kernel are all loaded and tested the same way.
 *
 * Operands. A 2-D operand (x, y, dy, dx) is an M x N matrix whose element (i, j)
 * lives at ((T*)data)[offset + i*row_stride + j*col_stride], T being its dtype.
 * A 1-D operand (gamma, dgamma: N entries; r: M entries) has element k at
 * ((T*)data)[offset + k*stride]. Offsets and strides count elements, not bytes.
 * Pointers live in the plugin's memory (device memory for a GPU plugin): allocate
 * and copy them with the table's memory functions.
 *
 * Math (rows are independent, every reduction accumulates in fp32):
 *     r[i]      = 1 / sqrt(sum_j x[i,j]^2 / N + epsilon)         (fp32)
 *     y[i,j]    = x[i,j] * r[i] * gamma[j]
 *     u         = dy[i,j] * gamma[j]
 *     dx[i,j]   = r[i]*u - x[i,j] * r[i]^3 * (sum_j u*x[i,j]) / N
 *     dgamma[j] = sum_i dy[i,j] * x[i,j] * r[i]                  (a sum, never a mean)
 * The backward takes r as the forward wrote it.
 *
 * Evaluation orders. The harness's error bound (oracles/src/kernel_model.hpp) admits any
 * order of these formulas that keeps every intermediate in fp32: the sums in any order and
 * tree, with or without fma; mean = sum/N or sum*(1/N); r = rsqrt within 2 ulp or
 * 1/sqrt; y = x*r*gamma in any association, rounded once to y's dtype. For the second term
 * of dx it admits the standard orders, each with a plugin under kernels/examples/:
 *     shipped kernels   (x*r) * (s/N*r*r)                      r^3 never formed
 *     abi.h, left to right  ((x*(r*r*r))*s)/N                  abi_order/
 *     the document's    (x*r^3) * mean(u*x)                    reference_order/
 *     PyTorch / Apex    rstd*(u - x_hat*mean(u*x_hat)), x_hat = x*rstd, dgamma = sum dy*x_hat
 *                                                              torch_order/
 *     Liger-Kernel      rstd*u + rstd*(((-1/N*rstd)*rstd*s)*x) liger_order/
 * (s = sum_j u*x[i,j]), and the subnormal intermediates of each. An order is weaker where
 * one of its intermediates overflows fp32 while the shipped order's stay finite: r^3 (and
 * x*r^3, (x*r^3)*s) past FLT_MAX once r > 7e12, r^2/N once r > 1.8e19*sqrt(N), rows tiny next
 * to epsilon. There the bound
 * still holds, so such a kernel fails, and the failure says it is a defect of the order, naming
 * the element and the intermediate. Rounding an intermediate into fp16/bf16 is outside the
 * fp32 contract, with one declared exception: a plugin that rounds x_hat = x*r into x's dtype
 * before the multiply by gamma (ATen's composite rms_norm, Liger's "llama" casting mode)
 * declares NC_ROUNDS_NORMALIZED, and its y bound then carries that one rounding more; a
 * backward that rounds u = dy*gamma and dgamma's terms into x's dtype (that formula
 * differentiated by autograd on 16-bit tensors) declares NC_ROUNDS_GRADIENTS, and its dx and
 * dgamma bounds carry those roundings (where such an intermediate can overflow x's dtype, the
 * row's dx or the dgamma column is outside the domain and not judged). A plugin that declares
 * nothing is held to the strict bound.
 *
 * Variants (version 3). A call carries an operation (nc_operation, args->op); the zero
 * operation is the plain one above. A plugin declares the operations it serves
 * (nc_capabilities.operations); a call with any other operation may be answered
 * NC_ERR_UNSUPPORTED.
 *   - Residual add (op.residual != NC_RESIDUAL_NONE): h = x + residual, summed in fp32;
 *     residual_out[i,j] = h rounded to x's dtype (written on every call; with op.in_place the
 *     residual_out operand is the residual operand itself, same data, offset and strides, and
 *     nothing else may share its bytes); y and r are the plain formulas applied to
 *         NC_RESIDUAL_ROUNDED  h rounded to x's dtype (vLLM's fused_add_rms_norm), or
 *         NC_RESIDUAL_FP32     the fp32 sum itself (FlashInfer's fused_add_rmsnorm).
 *     The backward of a residual operation takes x = the residual_out its forward wrote (the
 *     stored h) and residual_grad, the gradient reaching residual_out along the residual
 *     stream (x's dtype, M x N), and writes dx = d(loss)/dh = the plain dx + residual_grad,
 *     summed in fp32 and rounded once: that one tensor is the gradient of both x and residual.
 *     The fp32 sum of NC_RESIDUAL_FP32 is not stored, so no backward can differentiate at it:
 *     its backward is the same call (the gradient at the stored h), and the harness judges
 *     the backward of residual operations under NC_RESIDUAL_ROUNDED.
 *   - Weight offset (op.weight_offset, finite; 0 is the plain operator, 1 is Gemma's): gamma is
 *     replaced by g[j] = weight_offset + gamma[j] formed in fp32 (one fp32 rounding) in y and in
 *     u = dy*g; dgamma stays sum_i dy*x*r (the offset has no gradient).
 *   - Per-head rows (op.rows = NC_ROWS_HEADS; QK-norm of Qwen3, Gemma 3, OLMo 2): the M rows are
 *     the (token, head) pairs of [M/heads, heads, N] views, each 2-D operand with its own token
 *     stride (row_stride) and head stride (head.x, head.y, ...): row i starts at offset +
 *     (i/heads)*row_stride + (i%heads)*head_stride. The math is the plain one on those rows
 *     (gamma has the N entries of a head, r the M entries in row order); any residual or offset
 *     composes with it. head.heads >= 1 divides m; strides >= 1 where their dimension has two
 *     or more entries, and no two elements of an operand share an address. A 4-D view
 *     [batches, tokens, heads, N] (op.rows = NC_ROWS_BATCHES, e.g. [B, S, H, D] of padded
 *     sequences; head.tokens >= 1 tokens a batch, heads*tokens dividing m) adds a batch stride
 *     per operand (head.batch.x, ...): row i is head i % heads of token t of batch b,
 *     i/heads = b*tokens + t, at offset + b*batch_stride + t*row_stride + (i%heads)*head_stride.
 *     heads = 1 makes it a [batches, tokens, N] view of token rows. A plugin that declares only
 *     NC_ROWS_HEADS never gets a 4-D view.
 *   - Partial-width rows (normalize the first D of W columns: DeepSeek MLA's 512 of 576) need
 *     no field: N = D and row_stride = W; the columns past N are neither read nor written.
 *   - Quantized output (op.quant != NC_QUANT_NONE; vLLM's rms_norm_static_fp8_quant and
 *     rms_norm_dynamic_per_token_quant, per-group FP8, FlashInfer's and TensorRT-LLM's FP8
 *     norms): y holds one-byte codes, y.dtype NC_FP8_E4M3, NC_FP8_E5M2 or NC_INT8 as op.quant
 *     says, q[i,j] = Q(v[i,j] / scale) where v is the fp32 value y would have before its rounding
 *     (x*r*g in fp32; of h with a residual add) and Q rounds to nearest even into the format
 *     and saturates: e4m3 is OCP's E4M3 ("fn": no infinities, +-448 largest, S.1111.111 NaN),
 *     e5m2 OCP's E5M2 (+-57344 largest), int8 symmetric (-127..127; -128 is never written).
 *     Finite values past the largest code and +-Inf give +-max; NaN gives a NaN code (either
 *     sign; int8: 0). The scale operand is an fp32 matrix:
 *         NC_SCALE_STATIC     the caller's scale, an input of 1 x 1 (positive, normal and finite;
 *                             the contract cannot check its value, it lives in plugin memory)
 *         NC_SCALE_PER_TOKEN  written by the kernel, one a row (M x 1):
 *                             scale[i] = max(amax_j |v[i,j]| / max, op.scale_floor)
 *         NC_SCALE_PER_GROUP  written, one a group of op.group columns (M x N/group; N a multiple
 *                             of op.group): the same over the group's columns
 *     where amax / max is rounded to fp32 (or formed as amax * (1/max)). op.apply says how the
 *     kernel scales: NC_APPLY_RECIPROCAL q = Q(v * (1/scale)), 1/scale rounded to fp32 (within
 *     an ulp) and the product too; NC_APPLY_DIVIDE q = Q(v / scale), the quotient rounded to
 *     fp32. A dynamic scale of 0 (a zero row with op.scale_floor 0) gives the codes of 0/0: NaN
 *     codes (int8: 0) or zeros. A quantized operation takes 2-D rows (op.rows NC_ROWS_MATRIX),
 *     composes with the residual add and the weight offset, writes r as the plain forward does,
 *     and has no backward: a backward call with op.quant != NC_QUANT_NONE is invalid. A kernel
 *     that quantizes y rounded to x's dtype first (the unfused composition of the plain forward
 *     and a quantization, as vLLM's fused kernels compute it) declares NC_QUANTIZES_ROUNDED_Y.
 * Shape rules (version 3): nc_capabilities.n_multiple > 1 says the plugin serves only N a
 * multiple of it (llm.c's 16-byte loads without a tail); the harness draws every N inside it.
 *
 * Errors. A call returns NC_OK or a status; on any status other than NC_OK the
 * plugin's last_error() names the argument, its value and the rule broken. A call
 * rejected with NC_ERR_INVALID_ARGUMENT has written nothing: outputs and workspace
 * are bit-identical to what they were.
 *
 * The contract, every rule the harness checks (normcheck's contract property breaks each one
 * and the guarded buffers watch every byte; kernels/api/contract.cpp is one checker of it):
 *   - Messages. last_error() names the broken argument in single quotes: 'x', or a field of it,
 *     'x.row_stride'; the harness looks for that quoted name. E.g.
 *     "argument 'x.col_stride' = 0: must be nonzero". last_error() never returns NULL.
 *   - Shapes. M >= 0, N >= 1. M = 0 writes nothing to y, r, dx and writes dgamma = 0 (a sum
 *     over no rows). epsilon is finite and >= 0 (0 allowed: a zero row then gives what the
 *     math gives, r = Inf).
 *   - dtypes. x, y, dy, dx one of fp32, fp16, bf16, all the same (y of a quantized operation:
 *     the codes' dtype, and scale fp32); gamma x's dtype or fp32; dgamma gamma's dtype; r fp32.
 *     Any other value, and any out-of-enum value, is invalid.
 *   - Layouts. Data pointers non-NULL (r's only when the plugin writes r); offsets >= 0;
 *     column strides nonzero; an operand's rows may not overlap one another; no element index
 *     may overflow int64 (offset + (M-1)*|row_stride| + (N-1)*|col_stride|).
 *   - Overlap. No output (y, r, dx, dgamma, the workspace) may share a byte with any other
 *     operand, input or output, of the same call (the byte ranges its elements can touch).
 *   - Workspace. workspace_size(args) depends only on M, N and the dtypes; the backward needs
 *     workspace_bytes >= that and, when it is > 0, a non-NULL, 16-byte aligned workspace (a
 *     kernel that needs less alignment may serve a call whose workspace has less, giving the
 *     bits of the aligned call; every other rule is rejected). The workspace is scratch: its
 *     contents before and after the call mean nothing, its bytes outside [workspace,
 *     workspace + workspace_bytes) are never touched.
 *   - Results. Every element of every output is written on NC_OK (nothing else is); inputs
 *     are never written; rows are independent (NaN/Inf in one row never reach another's
 *     outputs); dgamma is deterministic (bit-identical run to run for the same call); the
 *     forward's y and r for a row depend on that row only (batch invariance).
 *   - Partial plugins (version 2): a valid call outside nc_capabilities may be answered
 *     NC_ERR_UNSUPPORTED, nothing written; an invalid call outside them may be answered
 *     NC_ERR_UNSUPPORTED or NC_ERR_INVALID_ARGUMENT. Inside them NC_ERR_UNSUPPORTED is a
 *     failure of the capability named.
 */
#ifndef NORMCHECK_ABI_H
#define NORMCHECK_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NORMCHECK_ABI_VERSION 3u

/* each enum spans 32 bits (the _MAX_ENUM entries), so any value a caller passes is a
 * value of the type and a plugin can reject it instead of meeting undefined behaviour */
typedef enum nc_dtype {
  NC_F32 = 0,
  NC_F16 = 1,
  NC_BF16 = 2,
  /* version 3: the one-byte codes of a quantized output (y only, abi.h "Variants") */
  NC_FP8_E4M3 = 3,
  NC_FP8_E5M2 = 4,
  NC_INT8 = 5,
  NC_DTYPE_MAX_ENUM = 0x7fffffff
} nc_dtype;

typedef enum nc_status {
  NC_OK = 0,
  NC_ERR_INVALID_ARGUMENT = 1, /* the call breaks the contract; nothing was written */
  NC_ERR_UNSUPPORTED = 2,      /* a valid call this plugin does not implement */
  NC_ERR_RUNTIME = 3,          /* the device or the emulator failed (launch, fault, divergence) */
  NC_ERR_NO_DEVICE = 4,        /* the plugin's device is absent */
  NC_STATUS_MAX_ENUM = 0x7fffffff
} nc_status;

typedef struct nc_matrix {
  void* data;
  nc_dtype dtype;
  int64_t offset;
  int64_t row_stride;
  int64_t col_stride;
} nc_matrix;

typedef struct nc_vector {
  void* data;
  nc_dtype dtype;
  int64_t offset;
  int64_t stride;
} nc_vector;

/* the residual add of a variant (abi.h "Variants") */
typedef enum nc_residual {
  NC_RESIDUAL_NONE = 0,    /* no residual operand: the plain operator */
  NC_RESIDUAL_ROUNDED = 1, /* h = x + residual rounded to x's dtype, then normalized (vLLM) */
  NC_RESIDUAL_FP32 = 2,    /* the fp32 sum normalized, its rounding stored (FlashInfer) */
  NC_RESIDUAL_MAX_ENUM = 0x7fffffff
} nc_residual;

/* the rows of a call (abi.h "Variants") */
typedef enum nc_rows {
  NC_ROWS_MATRIX = 0, /* row i of a 2-D operand starts at offset + i*row_stride */
  NC_ROWS_HEADS = 1,  /* per-head rows of a [tokens, heads, N] view: row i is head i % heads of
                         token i / heads, at offset + (i/heads)*row_stride + (i%heads)*head_stride */
  NC_ROWS_BATCHES = 2, /* per-head rows of a 4-D view [batches, tokens, heads, N] (head.tokens
                          tokens a batch): token t of batch b (i/heads = b*tokens + t) at offset +
                          b*batch_stride + t*row_stride + (i%heads)*head_stride */
  NC_ROWS_MAX_ENUM = 0x7fffffff
} nc_rows;

/* the output of a call (abi.h "Variants"): y in x's dtype, or the codes of a quantization */
typedef enum nc_quant {
  NC_QUANT_NONE = 0,     /* y in x's dtype */
  NC_QUANT_FP8_E4M3 = 1, /* y.dtype NC_FP8_E4M3 */
  NC_QUANT_FP8_E5M2 = 2, /* y.dtype NC_FP8_E5M2 */
  NC_QUANT_INT8 = 3,     /* y.dtype NC_INT8 */
  NC_QUANT_MAX_ENUM = 0x7fffffff
} nc_quant;

/* where a quantized output's scale comes from */
typedef enum nc_scale {
  NC_SCALE_STATIC = 0,    /* one scale, an input (1 x 1) */
  NC_SCALE_PER_TOKEN = 1, /* one a row, written (M x 1) */
  NC_SCALE_PER_GROUP = 2, /* one a group of op.group columns, written (M x N/group) */
  NC_SCALE_MAX_ENUM = 0x7fffffff
} nc_scale;

/* how a kernel applies the scale */
typedef enum nc_scale_apply {
  NC_APPLY_RECIPROCAL = 0, /* v * (1/scale), the reciprocal rounded to fp32 */
  NC_APPLY_DIVIDE = 1,     /* v / scale */
  NC_APPLY_MAX_ENUM = 0x7fffffff
} nc_scale_apply;

/* the operation of a call (version 3); all zero: the plain operator */
typedef struct nc_operation {
  nc_residual residual;
  uint32_t in_place;   /* 1: residual_out is the residual operand itself (residual != NONE) */
  float weight_offset; /* y = x*r*(weight_offset + gamma), the sum formed in fp32; finite */
  nc_rows rows;        /* the rows' geometry: 2-D rows, or per-head rows of a 3-D or a 4-D view */
  /* a quantized output (read only when quant != NC_QUANT_NONE) */
  nc_quant quant;
  nc_scale scale;
  nc_scale_apply apply;
  int32_t group;     /* NC_SCALE_PER_GROUP: columns a group, >= 1 */
  float scale_floor; /* dynamic scales: the least scale written, finite and >= 0 */
} nc_operation;

/* the per-head rows of a call (op.rows == NC_ROWS_HEADS or NC_ROWS_BATCHES): the head stride of
   each 2-D operand, in elements; of a 4-D view also the tokens a batch and the batch strides */
typedef struct nc_forward_heads {
  int64_t heads; /* rows per token: >= 1, dividing m */
  int64_t x, y, residual, residual_out;
  /* op.rows == NC_ROWS_BATCHES: tokens a batch (>= 1, heads*tokens dividing m) and each 2-D
     operand's batch stride */
  int64_t tokens;
  struct {
    int64_t x, y, residual, residual_out;
  } batch;
} nc_forward_heads;

typedef struct nc_backward_heads {
  int64_t heads;
  int64_t x, dy, dx, residual_grad;
  int64_t tokens;
  struct {
    int64_t x, dy, dx, residual_grad;
  } batch;
} nc_backward_heads;

typedef struct nc_forward_args {
  int64_t m, n;
  float epsilon;   /* finite, >= 0 */
  nc_matrix x;     /* input, fp32 | fp16 | bf16 */
  nc_vector gamma; /* input, x's dtype or fp32 */
  nc_matrix y;     /* output, x's dtype */
  nc_vector r;     /* output, fp32, M entries */
  void* stream;    /* cudaStream_t for a GPU plugin; NULL: the default stream */
  /* version 3 */
  nc_operation op;
  nc_matrix residual;     /* input, x's dtype, M x N (op.residual != NONE) */
  nc_matrix residual_out; /* output, x's dtype, M x N: h; with op.in_place the residual operand */
  nc_forward_heads head;  /* read only when op.rows is NC_ROWS_HEADS or NC_ROWS_BATCHES */
  nc_matrix scale;        /* fp32, op.quant != NONE: the input 1 x 1 of NC_SCALE_STATIC, else an
                             output of M x 1 (per token) or M x N/group (per group) */
} nc_forward_args;

typedef struct nc_backward_args {
  int64_t m, n;
  nc_matrix x;      /* input */
  nc_vector gamma;  /* input */
  nc_matrix dy;     /* input, x's dtype */
  nc_vector r;      /* input, fp32, as the forward wrote it */
  nc_matrix dx;     /* output, x's dtype */
  nc_vector dgamma; /* output, gamma's dtype, N entries */
  void* workspace;  /* at least workspace_size() bytes of plugin memory; may be NULL if that is 0 */
  size_t workspace_bytes;
  void* stream;
  /* version 3: x is the forward's residual_out for a residual operation */
  nc_operation op;
  nc_matrix residual_grad; /* input, x's dtype, M x N (op.residual != NONE): added to dx */
  nc_backward_heads head;  /* read only when op.rows is NC_ROWS_HEADS or NC_ROWS_BATCHES */
} nc_backward_args;

typedef enum nc_copy_kind {
  NC_HOST_TO_DEVICE = 0,
  NC_DEVICE_TO_HOST = 1,
  NC_DEVICE_TO_DEVICE = 2,
  NC_COPY_KIND_MAX_ENUM = 0x7fffffff
} nc_copy_kind;

/* capability bits (nc_plugin.capabilities). Version 1 declared what it serves with the first
 * four; a version-2 plugin declares it in nc_capabilities instead and sets only
 * NC_CAP_DEVICE_MEMORY here (the first four are read only when caps is NULL). */
#define NC_CAP_F16 (1u << 0)
#define NC_CAP_BF16 (1u << 1)
#define NC_CAP_GAMMA_F32 (1u << 2)    /* gamma in fp32 with x in fp16/bf16 */
#define NC_CAP_STRIDED (1u << 3)      /* any strides and offsets */
#define NC_CAP_DEVICE_MEMORY (1u << 4) /* pointers are not host memory: use copy() */

/* (x, gamma) dtype pairs (nc_capabilities.dtype_pairs); y, dy, dx are in x's dtype, dgamma in
 * gamma's, r in fp32 */
#define NC_PAIR_F32 (1u << 0)            /* x fp32, gamma fp32 */
#define NC_PAIR_F16 (1u << 1)            /* x fp16, gamma fp16 */
#define NC_PAIR_BF16 (1u << 2)           /* x bf16, gamma bf16 */
#define NC_PAIR_F16_GAMMA_F32 (1u << 3)  /* x fp16, gamma fp32 */
#define NC_PAIR_BF16_GAMMA_F32 (1u << 4) /* x bf16, gamma fp32 */
#define NC_PAIRS_ALL 0x1fu

/* layouts beyond dense operands (nc_capabilities.layouts). Dense: every matrix has column
 * stride 1, row stride N and offset 0, every vector stride 1 and offset 0, and every buffer
 * starts 256-byte aligned (as cudaMalloc gives). */
#define NC_LAYOUT_PADDED_ROWS (1u << 0)    /* row stride > N, every row start still 16-byte aligned */
#define NC_LAYOUT_OFFSETS (1u << 1)        /* element offsets that keep 16-byte alignment */
#define NC_LAYOUT_MISALIGNED (1u << 2)     /* any offset and row stride >= N: rows off 16 bytes */
#define NC_LAYOUT_COLUMN_STRIDED (1u << 3) /* column stride != 1 (column-major included), vector stride != 1 */
#define NC_LAYOUTS_ALL 0xfu

/* what a plugin does not do (nc_capabilities.flags) */
#define NC_FORWARD_ONLY (1u << 0) /* no backward: backward and workspace_size may be NULL */
#define NC_NO_R (1u << 1)         /* the forward writes no r; the harness passes r.data = NULL.
                                     Only with NC_FORWARD_ONLY (the backward takes the forward's r) */
#define NC_ROUNDS_NORMALIZED (1u << 2) /* the forward rounds x_hat = x*r into x's dtype before the
                                          multiply by gamma (see "Evaluation orders") */
#define NC_ROUNDS_GRADIENTS (1u << 3)  /* the backward rounds u = dy*gamma and each dgamma term
                                          dy*x_hat into x's dtype (autograd through 16-bit tensors) */
#define NC_FLUSHES_SUBNORMALS (1u << 4) /* version 3: fp32 subnormals are zero, read or made (nvcc
                                          --use_fast_math, .ftz): the harness reads a subnormal input
                                          (as fp32: bf16's and fp32's, not fp16's) as 0, and admits a
                                          flushed intermediate or result (2^-126 an operation where
                                          a kernel that underflows gradually has 2^-150) */
#define NC_QUANTIZES_ROUNDED_Y (1u << 5) /* version 3: a quantized output quantizes y rounded to
                                          x's dtype (see "Variants"); the codes' bound carries it */

/* What a version-2 plugin serves. The harness draws every case inside it, and a plugin that
 * answers NC_ERR_UNSUPPORTED for a call inside it fails, naming the capability. A call
 * outside it may be answered NC_ERR_UNSUPPORTED. */
typedef struct nc_capabilities {
  uint32_t dtype_pairs;   /* NC_PAIR_* bits; at least one */
  uint32_t layouts;       /* NC_LAYOUT_* bits; 0: dense operands only */
  uint32_t flags;         /* NC_FORWARD_ONLY, NC_NO_R, NC_ROUNDS_*, NC_FLUSHES_SUBNORMALS, NC_QUANTIZES_ROUNDED_Y */
  uint32_t epsilon_count; /* 0: any finite epsilon >= 0; else the epsilons it takes */
  const float* epsilons;  /* epsilon_count values (e.g. a kernel with 1e-5 built in) */
  int64_t max_n;          /* the longest row it serves; 0: no limit */
  int64_t max_elements;   /* the largest M*N it serves; 0: no limit */
  /* version 3 */
  uint32_t operation_count;       /* 0: the plain operation only */
  const nc_operation* operations; /* the operations it serves (the plain one only if listed) */
  int64_t n_multiple;             /* 0 or 1: any N; k > 1: N a multiple of k only */
} nc_capabilities;

typedef struct nc_plugin {
  uint32_t abi_version;  /* NORMCHECK_ABI_VERSION */
  const char* name;      /* e.g. "normcheck-cuda" */
  const char* backend;   /* "cuda" | "simt" | anything a user chooses */
  uint32_t capabilities; /* NC_CAP_* bits */

  nc_status (*forward)(const nc_forward_args* args);
  nc_status (*backward)(const nc_backward_args* args);
  /* bytes of workspace backward() needs for these arguments (their m, n, dtypes). */
  nc_status (*workspace_size)(const nc_backward_args* args, size_t* bytes);

  /* memory of the plugin's device */
  nc_status (*alloc)(size_t bytes, void** ptr);
  nc_status (*free)(void* ptr);
  nc_status (*copy)(void* dst, const void* src, size_t bytes, nc_copy_kind kind);
  nc_status (*synchronize)(void);

  /* the message of the last failed call on this OS thread ("" if none) */
  const char* (*last_error)(void);

  /* optional (may be NULL): the name of the code path a call would take, for the
   * harness's distribution tags; a static string */
  const char* (*forward_path)(const nc_forward_args* args);
  const char* (*backward_path)(const nc_backward_args* args);

  /* version 2 (a version-1 table ends above) */
  /* what the plugin serves; NULL: everything the contract allows, as the NC_CAP_* bits of a
   * version-1 plugin say */
  const nc_capabilities* caps;
  /* optional (NULL-terminated lists, or NULL): every path name forward_path/backward_path can
   * return. Distribution minimums on paths apply only to the paths a plugin lists */
  const char* const* forward_paths;
  const char* const* backward_paths;

  /* version 3 */
  /* optional (may be NULL or return ""): one line naming the device the kernels run on, for the
   * reports, e.g. "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, driver 580.159.04, CUDA 13.0"; a
   * static string. The harness adds the host's CPU */
  const char* (*machine)(void);
} nc_plugin;

typedef const nc_plugin* (*nc_plugin_entry)(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif /* NORMCHECK_ABI_H */
