"""Residual add + RMSNorm in numpy (abi.h "Variants"), both rounding contracts, in place or not:

    h = x + residual                  the fp32 sum
    residual_out = h rounded to x's dtype
    y = rmsnorm(h) * gamma            h rounded first ("rounded": vLLM's fused_add_rms_norm) or the
                                      fp32 sum itself ("fp32": FlashInfer's fused_add_rmsnorm)
    dx = d_residual = the plain dx at the stored h + residual_grad, summed in fp32

A residual add's forward takes residual= and residual_rounding= and returns (y, r, residual_out);
its backward (x is the stored h) takes residual_grad=. The rest is numpy_reference.py's order.
"""

import numpy as np

from numpy_reference import f32, rstd_of

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "fp16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
    "operations": [{"residual": contract, "in_place": in_place} for contract in ("rounded", "fp32")
                   for in_place in (False, True)],
}


def normalized(x, residual, residual_rounding):
    """h as the contract normalizes it, and h rounded to x's dtype (residual_out)"""
    h32 = f32(x) + f32(residual)
    stored = h32.astype(x.dtype)
    return (f32(stored) if residual_rounding == "rounded" else h32), stored


def forward(x, gamma, eps, residual=None, residual_rounding="rounded"):
    with np.errstate(all="ignore"):
        h, stored = normalized(x, residual, residual_rounding)
        rstd = rstd_of(h, eps)
        y = (h * rstd[:, None]) * f32(gamma)
        return y.astype(x.dtype), rstd.astype(np.float32), stored


def backward(dy, x, gamma, r, eps, residual_grad=None):
    with np.errstate(all="ignore"):
        xf, dyf, gf = f32(x), f32(dy), f32(gamma)
        x_hat = xf * f32(r)[:, None]
        u = dyf * gf
        mean_ux_hat = np.sum(u * x_hat, axis=1, dtype=np.float32) / np.float32(x.shape[1])
        dx = f32(r)[:, None] * (u - x_hat * mean_ux_hat[:, None]) + f32(residual_grad)
        dgamma = np.sum(dyf * x_hat, axis=0, dtype=np.float32)
        return dx.astype(x.dtype), dgamma.astype(gamma.dtype)
