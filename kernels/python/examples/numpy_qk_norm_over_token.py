"""numpy_qk_norm.py with a published class of bug: the norm is taken over a token's whole row of
heads ([tokens, heads * head_dim]) instead of each head's head_dim, as a kernel that reshapes the
per-head view to 2-D before normalizing does. Right for one head a token, wrong for two or more:
`normcheck check all` must fail it and shrink the case to a small per-head view.
"""

import numpy as np

from numpy_qk_norm import NORMCHECK_CAPABILITIES, backward  # noqa: F401 -- the declaration and backward as given
from numpy_reference import f32


def forward(x, gamma, eps, weight_offset=0.0):
    with np.errstate(all="ignore"):
        xf = f32(x)
        # the bug: one rstd per token, over every head of it
        tokens = xf.reshape(xf.shape[0], -1)
        rstd = np.float32(1) / np.sqrt(np.sum(tokens * tokens, axis=-1, dtype=np.float32) / np.float32(tokens.shape[-1])
                                       + np.float32(eps))
        rstd = np.repeat(rstd, xf.size // (xf.shape[0] * xf.shape[-1])).reshape(xf.shape[:-1])
        y = (xf * rstd[..., None]) * (f32(gamma) + np.float32(weight_offset))
        return y.astype(x.dtype), rstd.astype(np.float32)
