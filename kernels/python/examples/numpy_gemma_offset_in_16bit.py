"""Gemma's offset added in gamma's own dtype (1 + gamma rounded to fp16), a published class of
defect: correct for fp32 gamma, caught where gamma is fp16. The rest is numpy_gemma.py."""

import numpy as np

from numpy_gemma import NORMCHECK_CAPABILITIES, backward  # noqa: F401 -- the kernel's backward and declaration
from numpy_reference import f32, rstd_of


def forward(x, gamma, eps, weight_offset=0.0):
    with np.errstate(all="ignore"):
        xf = f32(x)
        rstd = rstd_of(xf, eps)
        g = f32(gamma + gamma.dtype.type(weight_offset))  # the bug: the sum in gamma's dtype
        y = (xf * rstd[:, None]) * g
        return y.astype(x.dtype), rstd.astype(np.float32)
