"""A per-head RMSNorm (QK-norm of Qwen3, Gemma 3, OLMo 2) in numpy (abi.h "Variants", per-head
rows): it declares per-head rows only, plain and with Gemma's offset, so a call brings x, y, dy
and dx as [tokens, heads, head_dim] views with their own token and head strides (2-D [rows, N]
when a call has one head a token) and r as [tokens, heads], or, declared too, as 4-D views
[batches, tokens, heads, head_dim] (HF models norm q and k of [B, S, H, D]) and r as
[batches, tokens, heads]; every reduction is over the last axis, dgamma's over all the others. The plain operator's properties are not exercised on it:

    normcheck check all --kernel kernels/python/examples/numpy_qk_norm.py
"""

import numpy as np

from numpy_reference import f32

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "fp16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
    "operations": [{"rows": "heads"}, {"rows": "heads", "weight_offset": 1.0}, {"rows": "batches"}],
}


def rstd_of(xf, eps):
    n = np.float32(xf.shape[-1])
    return np.float32(1) / np.sqrt(np.sum(xf * xf, axis=-1, dtype=np.float32) / n + np.float32(eps))


def forward(x, gamma, eps, weight_offset=0.0):
    with np.errstate(all="ignore"):
        xf = f32(x)
        rstd = rstd_of(xf, eps)
        y = (xf * rstd[..., None]) * (f32(gamma) + np.float32(weight_offset))
        return y.astype(x.dtype), rstd.astype(np.float32)


def backward(dy, x, gamma, r, eps, weight_offset=0.0):
    with np.errstate(all="ignore"):
        xf, dyf = f32(x), f32(dy)
        x_hat = xf * f32(r)[..., None]
        u = dyf * (f32(gamma) + np.float32(weight_offset))
        mean_ux_hat = np.sum(u * x_hat, axis=-1, dtype=np.float32) / np.float32(x.shape[-1])
        dx = f32(r)[..., None] * (u - x_hat * mean_ux_hat[..., None])
        dgamma = np.sum((dyf * x_hat).reshape(-1, x.shape[-1]), axis=0, dtype=np.float32)
        return dx.astype(x.dtype), dgamma.astype(gamma.dtype)
