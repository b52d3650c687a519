"""epsilon outside the square root: r = 1 / (sqrt(mean(x^2)) + eps) instead of
1 / sqrt(mean(x^2) + eps). Nearly right for rows far above eps; wrong for small rows, zero rows
and large eps. The backward is numpy_reference.py's (it takes the r this forward wrote)."""

import numpy as np

from numpy_reference import NORMCHECK_CAPABILITIES, f32, backward  # noqa: F401 -- the kernel's backward and declaration


def forward(x, gamma, eps):
    with np.errstate(all="ignore"):
        xf = f32(x)
        mean = np.sum(xf * xf, axis=1, dtype=np.float32) / np.float32(x.shape[1])
        rstd = np.float32(1) / (np.sqrt(mean) + np.float32(eps))  # the bug
        y = (xf * rstd[:, None]) * f32(gamma)
        return y.astype(x.dtype), rstd.astype(np.float32)
