"""The source document's Triton RMSNorm (SEED.md, "The kernels' contract"), written from its
description: one program per row; BLOCK = the next power of two >= N; masked loads read 0 past
N and masked stores skip it; loads upcast to fp32 before squaring; mean = sum / N; r saved
(fp32, one per row) for the backward; the backward writes dx and an M x N fp32 partial table
of dy*x*r, and a second kernel sums the table per column into dgamma (no atomics).

    normcheck check all --kernel kernels/python/examples/seed_triton.py      (on a GPU: torch + triton)

Its contract, declared below and checked by forward/backward before any launch: contiguous
operands, fp32 or fp16 with gamma in x's dtype, N <= 4096, a partial table of at most 64 MiB
(M*N <= 4096*4096). Divisions and the square root are the IEEE-rounded ones (tl.div_rn,
tl.sqrt_rn): Triton's `/` on fp32 is an approximate division. dx is formed as
r*u - (x*r) * (mean(u*x)*r*r): the document's x*r^3 overflows fp32 once r > 7e12 (abi.h).
seed_triton_block.py is the document's divide-by-BLOCK exercise, the same kernels with
DIVIDE_BY_BLOCK set.
"""

import torch
import triton
import triton.language as tl

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16"],
    "layouts": [],  # dense operands only: the document rejects non-contiguous input
    "max_n": 4096,
    "max_elements": 4096 * 4096,  # the 64 MiB partial table
    "device": "cuda",
}

MAX_N = 4096
MAX_TABLE_BYTES = 64 << 20


# n and m are never specialized: Triton turns an int argument equal to 1 into a constant
@triton.jit(do_not_specialize=["n"])
def forward_kernel(x_ptr, gamma_ptr, y_ptr, r_ptr, n, epsilon, BLOCK: tl.constexpr, DIVIDE_BY_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n  # masked loads read 0 past N, masked stores skip it
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    gamma = tl.load(gamma_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.div_rn(tl.sum(x * x, axis=0), divisor(n, BLOCK, DIVIDE_BY_BLOCK))
    r = tl.div_rn(tl.full([], 1.0, tl.float32), tl.sqrt_rn(mean + epsilon))
    tl.store(y_ptr + row * n + cols, (x * r * gamma).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(r_ptr + row, r)


@triton.jit
def divisor(n, BLOCK: tl.constexpr, DIVIDE_BY_BLOCK: tl.constexpr):
    # the exercise's bug divides by the padded width; the right divisor is N
    if DIVIDE_BY_BLOCK:
        return tl.full([], BLOCK, tl.float32)
    else:
        return n.to(tl.float32)


@triton.jit(do_not_specialize=["n"])
def backward_kernel(x_ptr, gamma_ptr, dy_ptr, r_ptr, dx_ptr, partial_ptr, n, BLOCK: tl.constexpr,
                    DIVIDE_BY_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    gamma = tl.load(gamma_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row)
    u = dy * gamma
    mean_ux = tl.div_rn(tl.sum(u * x, axis=0), divisor(n, BLOCK, DIVIDE_BY_BLOCK))
    x_r = x * r
    dx = r * u - x_r * (mean_ux * r * r)
    tl.store(dx_ptr + row * n + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(partial_ptr + row * n + cols, dy * x_r, mask=mask)


@triton.jit(do_not_specialize=["m", "n"])
def column_sum_kernel(partial_ptr, dgamma_ptr, m, n, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n
    total = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(0, m):  # rows in order: deterministic, no atomics
        total += tl.load(partial_ptr + row.to(tl.int64) * n + cols, mask=mask, other=0.0)
    tl.store(dgamma_ptr + cols, total.to(dgamma_ptr.dtype.element_ty), mask=mask)


def check_contract(eps, **operands):
    """the document's rejections, before anything is launched; each names the argument"""
    x = operands["x"]
    m, n = x.shape
    for name, t in operands.items():
        if not t.is_cuda:
            raise ValueError(f"argument '{name}' is on {t.device}: must be on a CUDA device")
        if t.device != x.device:
            raise ValueError(f"argument '{name}' is on {t.device}, 'x' on {x.device}: must be on one device")
        if not t.is_contiguous():
            raise ValueError(f"argument '{name}' has strides {t.stride()}: must be contiguous")
    if x.dtype not in (torch.float32, torch.float16):
        raise ValueError(f"argument 'x' has dtype {x.dtype}: must be float32 or float16")
    for name, t in operands.items():
        if name != "r" and t.dtype != x.dtype:
            raise ValueError(f"argument '{name}' has dtype {t.dtype}: must be x's dtype {x.dtype}")
    if not (eps >= 0 and eps < float("inf")):
        raise ValueError(f"argument 'epsilon' = {eps}: must be finite and >= 0")
    if n > MAX_N:
        raise ValueError(f"argument 'n' = {n}: must be <= {MAX_N}")
    if m * n * 4 > MAX_TABLE_BYTES:
        raise ValueError(f"argument 'm' = {m}: the {m}x{n} fp32 partial table needs {m * n * 4} bytes, "
                         f"more than {MAX_TABLE_BYTES}")


def launch_forward(x, gamma, eps, divide_by_block=False):
    check_contract(eps, x=x, gamma=gamma)
    m, n = x.shape
    y = torch.empty_like(x)
    r = torch.empty(m, dtype=torch.float32, device=x.device)
    if m > 0:
        forward_kernel[(m,)](x, gamma, y, r, n, eps, BLOCK=triton.next_power_of_2(n),
                             DIVIDE_BY_BLOCK=divide_by_block)
    return y, r


def launch_backward(dy, x, gamma, r, divide_by_block=False):
    check_contract(0.0, x=x, gamma=gamma, dy=dy, r=r)
    m, n = x.shape
    dx = torch.empty_like(x)
    dgamma = torch.empty_like(gamma)
    partial = torch.empty((m, n), dtype=torch.float32, device=x.device)  # the M x N table
    if m > 0:
        backward_kernel[(m,)](x, gamma, dy, r, dx, partial, n, BLOCK=triton.next_power_of_2(n),
                              DIVIDE_BY_BLOCK=divide_by_block)
    block_n = 128
    column_sum_kernel[(triton.cdiv(n, block_n),)](partial, dgamma, m, n, BLOCK_N=block_n)
    return dx, dgamma


def forward(x, gamma, eps):
    return launch_forward(x, gamma, eps)


def backward(dy, x, gamma, r, eps):
    return launch_backward(dy, x, gamma, r)
