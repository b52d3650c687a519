"""ATen's composite rms_norm in numpy: x_hat = x*rstd is rounded to x's dtype BEFORE the gamma
multiply, then y = x_hat*gamma rounded again. A documented semantic, not a bug, but one rounding
more than abi.h's fp32 contract: declared with `rounds_normalized`, the y bound carries it.

    normcheck check all --kernel kernels/python/examples/numpy_rounds_normalized.py            passes (declared)
    normcheck check forward --kernel kernels/python/examples/numpy_rounds_normalized.py:undeclared   fails on fp16

`undeclared` is the same forward declaring nothing: held to the strict bound, it fails on fp16
rows (a second rounding of about half an fp16 ulp), as a kernel that declares nothing must.
The backward of `forward` is numpy_reference.py's.

`composite` is that formula differentiated as autograd does on 16-bit tensors: u = dy*gamma is
rounded to x's dtype, and so is each dgamma term dy*x_hat (x_hat the rounded one). Declared with
`rounds_gradients` too, it passes `check all`; `composite_undeclared_backward` declares only the
forward's semantic and fails dx on fp16, held to the strict backward bound.
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


def autograd_backward(dy, x, gamma, r, eps):
    with np.errstate(all="ignore"):
        xf, dyf, rf = f32(x), f32(dy), f32(r)[:, None]
        u = (dyf * f32(gamma)).astype(x.dtype).astype(np.float32)  # mul's backward, in x's dtype
        x_hat = xf * rf
        mean_ux_hat = np.sum(u * x_hat, axis=1, dtype=np.float32) / np.float32(x.shape[1])
        dx = rf * (u - x_hat * mean_ux_hat[:, None])
        x_hat_16 = x_hat.astype(x.dtype).astype(np.float32)
        terms = (dyf * x_hat_16).astype(x.dtype).astype(np.float32)  # dy*x_hat, in x's dtype
        dgamma = np.sum(terms, axis=0, dtype=np.float32)
        return dx.astype(x.dtype), dgamma.astype(gamma.dtype)


def composite(x, gamma, eps):
    return forward(x, gamma, eps)


def composite_undeclared_backward(x, gamma, eps):
    return forward(x, gamma, eps)


composite.normcheck_capabilities = {"rounds_gradients": True, "backward": "autograd_backward"}
composite_undeclared_backward.normcheck_capabilities = {"rounds_gradients": False, "backward": "autograd_backward"}
