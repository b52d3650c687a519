"""Gemma's RMSNorm in numpy (abi.h "Variants"): y = x_hat * (1 + gamma), the offset formed in
fp32; dx takes u = dy * (1 + gamma); dgamma = sum over rows of dy * x_hat (the offset has no
gradient). The rest is numpy_reference.py's order. It declares the Gemma operation only, so the
properties of the plain operator are not exercised on it:

    normcheck check all --kernel kernels/python/examples/numpy_gemma.py
"""

import numpy as np

from numpy_reference import f32, rstd_of

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "fp16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
    "operations": [{"weight_offset": 1.0}],
}


def offset_gamma(gamma, weight_offset):
    """weight_offset + gamma in fp32: Gemma's rule"""
    return f32(gamma) + np.float32(weight_offset)


def forward(x, gamma, eps, weight_offset=0.0):
    with np.errstate(all="ignore"):
        xf = f32(x)
        rstd = rstd_of(xf, eps)
        y = (xf * rstd[:, None]) * offset_gamma(gamma, weight_offset)
        return y.astype(x.dtype), rstd.astype(np.float32)


def backward(dy, x, gamma, r, eps, weight_offset=0.0):
    with np.errstate(all="ignore"):
        xf, dyf = f32(x), f32(dy)
        x_hat = xf * f32(r)[:, None]
        u = dyf * offset_gamma(gamma, weight_offset)
        mean_ux_hat = np.sum(u * x_hat, axis=1, dtype=np.float32) / np.float32(x.shape[1])
        dx = f32(r)[:, None] * (u - x_hat * mean_ux_hat[:, None])
        dgamma = np.sum(dyf * x_hat, axis=0, dtype=np.float32)
        return dx.astype(x.dtype), dgamma.astype(gamma.dtype)
