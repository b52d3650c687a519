"""torch.nn.functional.rms_norm as a normcheck kernel, autograd style: the bridge calls the
differentiable function for the forward and takes dx, dgamma from torch.autograd.grad of the
same call (torch's own backward), on views with the case's strides.

    normcheck check all --kernel kernels/python/examples/torch_rms_norm.py          forward only (no r)
    normcheck check all --kernel kernels/python/examples/torch_rms_norm.py:with_r   forward and backward

rms_norm returns no r, and the harness's backward takes the forward's r (abi.h: NC_NO_R needs
NC_FORWARD_ONLY), so `forward` is tested forward-only. `with_r` also returns an r the wrapper
computes itself with plain torch ops (1/sqrt(mean(x^2) + eps) in fp32): the r checks then judge
the wrapper's formula, not torch's kernel, and what they buy is the backward, which is torch's
autograd and ignores the r passed to it. A 16-bit x with an fp32 gamma makes rms_norm promote y
to fp32; the wrapper rounds it once to x's dtype, as the contract's y is.
"""

import torch

NORMCHECK_CAPABILITIES = {"style": "autograd", "writes_r": False, "name": "torch.nn.functional.rms_norm"}


def forward(x, gamma, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), gamma, eps).to(x.dtype)


def with_r(x, gamma, eps):
    y = forward(x, gamma, eps)
    xf = x.detach().float()
    r = 1.0 / torch.sqrt(xf.pow(2).mean(dim=-1) + eps)
    return y, r


with_r.normcheck_capabilities = {"writes_r": True, "name": "torch.nn.functional.rms_norm (r from the wrapper)"}
