"""A numpy RMSNorm kernel: the reference a Python kernel author starts from.

    normcheck check all --kernel kernels/python/examples/numpy_reference.py

Every step in fp32, in the fused order of PyTorch's kernels (abi.h admits it):
    rstd = 1 / sqrt(sum(x^2) / N + eps)      numpy sums fp32 arrays in fp32 (pairwise)
    x_hat = x * rstd;  y = x_hat * gamma     rounded once to x's dtype
    dx = rstd * (u - x_hat * mean(u * x_hat)),  u = dy * gamma
    dgamma = sum over rows of dy * x_hat     a sum, never a mean
x_hat is O(1) whatever the row's scale, so no intermediate overflows where the result is
finite. The operands arrive as numpy views with the case's strides and offsets; the kernel
copies them to contiguous fp32 first, because numpy's reductions take a different summation
order on strided memory (the layout-invariance property caught exactly that: a strided view
must give the bits of its contiguous copy).
"""

import numpy as np

# what it serves: numpy has no bf16; any strides and offsets (the views carry them)
NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "fp16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
}


def f32(a):
    """a contiguous fp32 copy: the same arithmetic whatever the operand's strides"""
    return np.ascontiguousarray(a, dtype=np.float32)


def rstd_of(xf, eps):
    n = np.float32(xf.shape[1])
    return np.float32(1) / np.sqrt(np.sum(xf * xf, axis=1, dtype=np.float32) / n + np.float32(eps))


def forward(x, gamma, eps):
    with np.errstate(all="ignore"):  # Inf and NaN rows are cases too: no warnings for them
        xf = f32(x)
        rstd = rstd_of(xf, eps)
        y = (xf * rstd[:, None]) * f32(gamma)
        return y.astype(x.dtype), rstd.astype(np.float32)


def backward(dy, x, gamma, r, eps):
    with np.errstate(all="ignore"):
        xf, dyf, gf = f32(x), f32(dy), f32(gamma)
        x_hat = xf * f32(r)[:, None]
        u = dyf * gf
        mean_ux_hat = np.sum(u * x_hat, axis=1, dtype=np.float32) / np.float32(x.shape[1])
        dx = f32(r)[:, None] * (u - x_hat * mean_ux_hat[:, None])
        dgamma = np.sum(dyf * x_hat, axis=0, dtype=np.float32)
        return dx.astype(x.dtype), dgamma.astype(gamma.dtype)
