"""A fused add that declares vLLM's contract (the sum rounded to x's dtype, then normalized) but
normalizes the fp32 sum (FlashInfer's): right for fp32 x and wherever the sum is exact, caught for
fp16. The rest is numpy_fused_add.py."""

import numpy as np

from numpy_fused_add import backward  # noqa: F401 -- the kernel's backward
from numpy_reference import f32, rstd_of

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "fp16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
    "operations": [{"residual": "rounded"}],
}


def forward(x, gamma, eps, residual=None, residual_rounding="rounded"):
    with np.errstate(all="ignore"):
        h = f32(x) + f32(residual)  # the bug: the fp32 sum, whatever the contract
        rstd = rstd_of(h, eps)
        y = (h * rstd[:, None]) * f32(gamma)
        return y.astype(x.dtype), rstd.astype(np.float32), h.astype(x.dtype)
