"""ATen's composite rms_norm in numpy: x_hat = x*rstd is rounded to x's dtype BEFORE the gamma
multiply, then y = x_hat*gamma rounded again. A documented semantic, not a bug, but one rounding
more than abi.h's fp32 contract: declared with `rounds_normalized`, the y bound carries it.

    normcheck check all --kernel kernels/python/examples/numpy_rounds_normalized.py            passes (declared)
    normcheck check forward --kernel kernels/python/examples/numpy_rounds_normalized.py:undeclared   fails on fp16

`undeclared` is the same forward declaring nothing: held to the strict bound, it fails on fp16
rows (a second rounding of about half an fp16 ulp), as a kernel that declares nothing must.
The backward is numpy_reference.py's.
"""

import numpy as np

from numpy_reference import NORMCHECK_CAPABILITIES as REFERENCE, backward, f32, rstd_of  # noqa: F401

NORMCHECK_CAPABILITIES = dict(REFERENCE, rounds_normalized=True)


def forward(x, gamma, eps):
    with np.errstate(all="ignore"):
        xf = f32(x)
        rstd = rstd_of(xf, eps)
        x_hat = (xf * rstd[:, None]).astype(x.dtype)  # the composite's type_as(input)
        y = x_hat.astype(np.float32) * f32(gamma)
        return y.astype(x.dtype), rstd.astype(np.float32)


def undeclared(x, gamma, eps):
    return forward(x, gamma, eps)


undeclared.normcheck_capabilities = {"rounds_normalized": False, "backward": "backward"}
