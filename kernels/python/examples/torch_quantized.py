"""RMSNorm with a quantized output in torch (GPU; torch's CPU without one): numpy_quantized.py's
operations, the codes made as vLLM's kernels make them, by torch's own casts. torch's cast to
float8_e4m3fn rounds to nearest even but does not saturate (past 464 it gives NaN), so the value
is clamped to +-max first, as vLLM's scaled_fp8_conversion does; int8 clamps to +-127 and rounds
half to even (torch.round), NaN -> 0. The codes go back as float8_e4m3fn, float8_e5m2 or int8
tensors (the bridge takes their bytes); the static scale comes as a 0-d float32 tensor on the
device.

    normcheck check all --kernel kernels/python/examples/torch_quantized.py --variant rmsnorm_fp8_per_token
"""

import torch

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "bf16", "fp16+fp32 gamma", "bf16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
    "forward_only": True,
    "max_elements": 1 << 26,
    "operations": [
        {},
        {"residual": "rounded"},
        {"residual": "rounded", "in_place": True},
        {"quant": "e4m3", "scale": "static", "apply": "reciprocal"},
        {"quant": "e5m2", "scale": "static", "apply": "divide"},
        {"quant": "int8", "scale": "static", "apply": "reciprocal"},
        {"quant": "e4m3", "scale": "per_token", "apply": "reciprocal", "scale_floor": 1.0 / (448.0 * 512.0)},
        {"quant": "e4m3", "scale": "per_group", "apply": "divide", "group": 64},
        {"weight_offset": 1.0, "quant": "int8", "scale": "per_token", "apply": "divide"},
        {"residual": "rounded", "in_place": True, "quant": "e4m3", "scale": "static", "apply": "reciprocal"},
        {"residual": "fp32", "quant": "e5m2", "scale": "per_token", "apply": "reciprocal"},
    ],
}

LARGEST = {"e4m3": 448.0, "e5m2": 57344.0, "int8": 127.0}


def codes_of(q, quant):
    """Q of fp32 values: clamp to +-max (saturation; NaN stays NaN), then torch's nearest-even cast"""
    if quant == "int8":
        return torch.nan_to_num(q.clamp(-127.0, 127.0).round(), nan=0.0).to(torch.int8)
    dtype = torch.float8_e4m3fn if quant == "e4m3" else torch.float8_e5m2
    return q.clamp(-LARGEST[quant], LARGEST[quant]).to(dtype)


def forward(x, gamma, eps, residual=None, residual_rounding="rounded", weight_offset=0.0, quant=None,
            scale_kind=None, apply="reciprocal", scale=None, group=None, scale_floor=0.0):
    h = x.float()
    stored = None
    if residual is not None:
        h = h + residual.float()
        stored = h.to(x.dtype)
        if residual_rounding == "rounded":
            h = stored.float()
    rstd = 1.0 / torch.sqrt((h * h).sum(dim=1) / h.shape[1] + eps)
    g = gamma.float() + weight_offset if weight_offset != 0.0 else gamma.float()
    v = (h * rstd[:, None]) * g
    if quant is None:
        out = (v.to(x.dtype), rstd)
    elif scale_kind == "static":
        q = v / scale if apply == "divide" else v * torch.reciprocal(scale)
        out = (codes_of(q, quant), rstd)
    else:
        m, n = v.shape
        blocks = v.reshape(m, 1, n) if scale_kind == "per_token" else v.reshape(m, n // group, group)
        a = blocks.abs()
        amax = torch.where(torch.isnan(a), torch.zeros_like(a), a).amax(dim=2)  # a NaN raises no amax
        s = torch.clamp(amax / LARGEST[quant], min=scale_floor)
        per = s[:, :, None]
        q = blocks / per if apply == "divide" else blocks * torch.reciprocal(per)
        out = (codes_of(q.reshape(m, n), quant), rstd, s[:, 0] if scale_kind == "per_token" else s)
    return out + ((stored,) if residual is not None else ())
