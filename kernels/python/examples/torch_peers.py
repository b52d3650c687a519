"""PyTorch's RMSNorms as normcheck kernels, autograd style: the bridge calls the differentiable
function for the forward and takes dx, dgamma from torch.autograd.grad of the same call (torch's
own backward), on views with the case's strides. Three peers nobody here wrote:

    eager       torch.nn.functional.rms_norm (torch's fused CUDA kernels on a GPU)
    compiled    the same call under torch.compile (Inductor generates Triton kernels)
    composite   torch's composite formula in plain tensor ops, as ATen writes it when no fused
                kernel serves: xf = x.float(); x_hat = (xf * rsqrt(mean(xf^2) + eps)).type_as(x);
                y = x_hat * gamma. x_hat is rounded to x's dtype BEFORE the gamma multiply;
                `composite_declared` declares that (rounds_normalized) and what autograd does
                through those 16-bit tensors (rounds_gradients: dy*gamma and dgamma's terms
                dy*x_hat in x's dtype); `composite` declares nothing

    normcheck check all --kernel kernels/python/examples/torch_peers.py:eager            forward only (no r)
    normcheck check all --kernel kernels/python/examples/torch_peers.py:eager_with_r     forward and backward

F.rms_norm returns no r, and abi.h's backward takes the forward's r (NC_NO_R needs
NC_FORWARD_ONLY), so each peer alone is tested forward-only; its `_with_r` form also returns an
r the wrapper computes with plain torch ops (1/sqrt(mean(x^2) + eps) in fp32). Its r checks
judge that formula, not torch's kernel; what it buys is the backward, torch's autograd, which
ignores the r passed to it. Where y comes out wider than x (a 16-bit x with an fp32 gamma
promotes), the wrapper rounds it once to x's dtype, as the contract's y is.

NORMCHECK_PEER_DTYPES (e.g. "bf16,bf16+fp32 gamma") narrows the declared dtype pairs, so a
campaign can be run and reported one dtype pair at a time.
"""

import os

import torch
import torch.nn.functional as F

DTYPES = ["fp32", "fp16", "bf16", "fp16+fp32 gamma", "bf16+fp32 gamma"]
if os.environ.get("NORMCHECK_PEER_DTYPES"):
    DTYPES = [d.strip() for d in os.environ["NORMCHECK_PEER_DTYPES"].split(",")]

NORMCHECK_CAPABILITIES = {"style": "autograd", "writes_r": False, "dtypes": DTYPES, "device": "cuda"}


def _r(x, eps):
    xf = x.detach().float()
    return 1.0 / torch.sqrt(xf.pow(2).mean(dim=-1) + eps)


def _declare(function, name, writes_r):
    function.normcheck_capabilities = {"writes_r": writes_r, "name": name + (" (r from the wrapper)" if writes_r else "")}
    return function


# ---- eager


def eager(x, gamma, eps):
    return F.rms_norm(x, (x.shape[-1],), gamma, eps).to(x.dtype)


def eager_with_r(x, gamma, eps):
    return eager(x, gamma, eps), _r(x, eps)


_declare(eager, "torch.nn.functional.rms_norm", False)
_declare(eager_with_r, "torch.nn.functional.rms_norm", True)

# ---- torch.compile

# Every new shape, dtype or stride pattern may compile again. Past dynamo's recompile limit a
# compiled function silently runs eager instead, which would test the wrong kernel: the limit
# is lifted, and where torch can be told, hitting it is an error rather than a fallback.
torch._dynamo.config.cache_size_limit = 1 << 20
for _knob in ("recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
    if hasattr(torch._dynamo.config, _knob):
        setattr(torch._dynamo.config, _knob, 1 << 20)
if hasattr(torch._dynamo.config, "fail_on_recompile_limit_hit"):
    torch._dynamo.config.fail_on_recompile_limit_hit = True


@torch.compile(dynamic=True, fullgraph=True)
def _compiled_rms_norm(x, gamma, eps: float):
    return F.rms_norm(x, (x.shape[-1],), gamma, eps)


def compiled(x, gamma, eps):
    return _compiled_rms_norm(x, gamma, eps).to(x.dtype)


def compiled_with_r(x, gamma, eps):
    return compiled(x, gamma, eps), _r(x, eps)


_declare(compiled, "torch.compile(torch.nn.functional.rms_norm)", False)
_declare(compiled_with_r, "torch.compile(torch.nn.functional.rms_norm)", True)

# ---- the composite formula


def composite(x, gamma, eps):
    xf = x.float()
    x_hat = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)).type_as(x)
    return (x_hat * gamma).to(x.dtype)


def composite_with_r(x, gamma, eps):
    return composite(x, gamma, eps), _r(x, eps)


_declare(composite, "torch composite rms_norm (plain tensor ops)", False)
_declare(composite_with_r, "torch composite rms_norm (plain tensor ops)", True)


# the same, declaring its semantics (abi.h NC_ROUNDS_NORMALIZED, NC_ROUNDS_GRADIENTS): the y bound
# carries the rounding of x_hat, the dx and dgamma bounds autograd's roundings to x's dtype;
# `composite` itself declares nothing and is held to the strict bounds
def composite_declared(x, gamma, eps):
    return composite(x, gamma, eps)


def composite_declared_with_r(x, gamma, eps):
    return composite_with_r(x, gamma, eps)


for _f, _r_too in ((composite_declared, False), (composite_declared_with_r, True)):
    _declare(_f, "torch composite rms_norm, declared rounds_normalized and rounds_gradients", _r_too)
    _f.normcheck_capabilities["rounds_normalized"] = True
    _f.normcheck_capabilities["rounds_gradients"] = True
