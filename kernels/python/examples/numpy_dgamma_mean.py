"""The document's "average" bug (SEED.md): dgamma averaged over the rows instead of summed.
Correct whenever M = 1; caught at M = 2 and beyond. The rest is numpy_reference.py."""

import numpy as np

from numpy_reference import NORMCHECK_CAPABILITIES, f32, forward  # noqa: F401 -- the kernel's forward and declaration


def backward(dy, x, gamma, r, eps):
    with np.errstate(all="ignore"):
        xf, dyf, gf = f32(x), f32(dy), f32(gamma)
        x_hat = xf * f32(r)[:, None]
        u = dyf * gf
        mean_ux_hat = np.sum(u * x_hat, axis=1, dtype=np.float32) / np.float32(x.shape[1])
        dx = f32(r)[:, None] * (u - x_hat * mean_ux_hat[:, None])
        dgamma = np.mean(dyf * x_hat, axis=0, dtype=np.float32)  # the bug: a mean over rows
        return dx.astype(x.dtype), dgamma.astype(gamma.dtype)
