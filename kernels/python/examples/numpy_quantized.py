"""RMSNorm with a quantized output in numpy (abi.h "Variants", "Quantized output"): vLLM's
rms_norm_static_fp8_quant, rms_norm_dynamic_per_token_quant, per-group FP8 and their fused-add forms.

    v = x * r * gamma                  the fp32 value y would have (numpy_reference.py's order; of
                                       h = x + residual with a residual add, numpy_fused_add.py's)
    q = Q(v * fl32(1/s))               apply "reciprocal"
    q = Q(fl32(v / s))                 apply "divide"
    s                                  static: the caller's (scale=); per token / per group:
                                       max(amax |v| / max, scale_floor) in fp32, returned

Q is written here from the formats' definitions, by exact scaling (no fp8 dtype in numpy):
    e4m3  OCP E4M3 "fn": bias 7, 3 mantissa bits, no infinities, S.1111.111 NaN, +-448 largest
    e5m2  OCP E5M2: bias 15, 2 mantissa bits, +-57344 largest finite, NaN 0x7e
    int8  symmetric -127..127 (-128 never written), NaN -> 0
Round to nearest even; finite values past the largest code and +-Inf give +-max (saturation); NaN
gives the positive NaN code; -0 gives the negative zero code (fp8) or 0 (int8).

A quantized forward gets quant=, scale_kind=, apply= and scale= (static) or scale_floor= (and
group= per group), and returns (codes, r) for a static scale, (codes, r, scales) for a dynamic
one, residual_out appended for a residual add (kernels/python/README.md). The codes are numpy
uint8 (int8 for int8). It serves the plain operator and the plain residual add too (the
"scale one" property compares a static scale of 1 with their y). Forward only (a quantized
operation has no backward).

    normcheck check all --kernel kernels/python/examples/numpy_quantized.py --variant rmsnorm_fp8_static
"""

import numpy as np

from numpy_fused_add import normalized
from numpy_reference import f32, rstd_of

VLLM_FP8_FLOOR = 1.0 / (448.0 * 512.0)  # vLLM's min_scaling_factor for fp8 per-token scales

NORMCHECK_CAPABILITIES = {
    "dtypes": ["fp32", "fp16", "fp16+fp32 gamma"],
    "layouts": ["padded_rows", "offsets", "misaligned", "column_strided"],
    "forward_only": True,
    "operations": [
        {},  # the plain operator and the residual add: the static twins' unquantized forms
        {"residual": "rounded"},
        {"residual": "rounded", "in_place": True},
        {"quant": "e4m3", "scale": "static", "apply": "reciprocal"},
        {"quant": "e5m2", "scale": "static", "apply": "divide"},
        {"quant": "int8", "scale": "static", "apply": "reciprocal"},
        {"quant": "e4m3", "scale": "per_token", "apply": "reciprocal", "scale_floor": VLLM_FP8_FLOOR},
        {"quant": "e4m3", "scale": "per_group", "apply": "divide", "group": 64},
        # Gemma's offset with int8 per-token scales (vLLM's int8 dynamic quantization has no floor)
        {"weight_offset": 1.0, "quant": "int8", "scale": "per_token", "apply": "divide"},
        # vLLM's fused_add_rms_norm_static_fp8_quant: the rounded sum, the residual updated in place
        # (and into a separate residual_out, for the in-place property's twin)
        {"residual": "rounded", "in_place": True, "quant": "e4m3", "scale": "static", "apply": "reciprocal"},
        {"residual": "rounded", "quant": "e4m3", "scale": "static", "apply": "reciprocal"},
    ],
}

# format -> (mantissa bits, exponent bias, largest finite value, its code, the NaN code); int8 apart
FP8 = {"e4m3": (3, 7, 448.0, 0x7E, 0x7F), "e5m2": (2, 15, 57344.0, 0x7B, 0x7E)}
LARGEST = {"e4m3": 448.0, "e5m2": 57344.0, "int8": 127.0}


def fp8_magnitude_codes(a, fmt):
    """the codes of finite magnitudes a >= 0 (float64), rounded to nearest even, no saturation: a in
    the binade [2^e, 2^(e+1)) (e >= 1 - bias) is k quanta of 2^(e - mantissa), below 2^(1 - bias)
    the subnormals' quantum 2^(1 - bias - mantissa). k = rint(a / quantum) is exact (a power-of-two
    scaling, then numpy's rint: half to even), and the code of k quanta of binade e is
    ((e + bias - 1) << mantissa) + k: k = 2^mantissa .. 2^(mantissa+1) are the binade's codes (the top
    one the next binade's first), and in the subnormal binade (e = 1 - bias) k itself"""
    mantissa, bias = FP8[fmt][:2]
    safe = np.where(a > 0, a, 1.0)
    _, e2 = np.frexp(safe)  # safe = f * 2^e2, f in [0.5, 1): binade e = e2 - 1
    e = np.maximum(e2.astype(np.int64) - 1, 1 - bias)
    k = np.rint(np.ldexp(safe, (mantissa - e).astype(np.int32))).astype(np.int64)
    return np.where(a > 0, ((e + bias - 1) << mantissa) + k, 0)


def fp8_codes(v, fmt):
    """Q of fp32 values into fp8 codes (uint8): nearest even, past the largest finite value (+-Inf
    too) the largest code, NaN the positive NaN code, the sign bit from v's (-0 -> 0x80)"""
    largest, max_code, nan_code = FP8[fmt][2:]
    a = np.abs(v.astype(np.float64))  # exact: every fp32 value is a float64
    code = fp8_magnitude_codes(np.where(a > largest, 0.0, a), fmt)  # Inf and NaN kept out
    code = np.where(a > largest, max_code, code)  # saturation (+-Inf included)
    code = code | np.where(np.signbit(v), 0x80, 0)
    return np.where(np.isnan(v), nan_code, code).astype(np.uint8)


def int8_codes(v):
    """Q into int8: clamp to +-127 (Inf too), round half to even, NaN -> 0"""
    with np.errstate(invalid="ignore"):
        q = np.rint(np.clip(v, np.float32(-127), np.float32(127)))
    return np.where(np.isnan(q), 0, q).astype(np.int8)


def codes_of(v, quant):
    return int8_codes(v) if quant == "int8" else fp8_codes(v, quant)


def dynamic_scales(v, quant, kind, group, floor):
    """max(amax |v| / max, floor) in fp32 a row (per_token: (M,)) or a group (per_group: (M, N/group));
    a NaN element does not raise amax (fmax, as the shipped kernel's fmaxf)"""
    m, n = v.shape
    blocks = v.reshape(m, 1, n) if kind == "per_token" else v.reshape(m, n // group, group)
    amax = np.fmax.reduce(np.abs(blocks), axis=2, initial=np.float32(0))
    s = np.maximum(amax / np.float32(LARGEST[quant]), np.float32(floor)).astype(np.float32)
    return s[:, 0] if kind == "per_token" else s


def scaled(v, s, apply):
    """v / s as the operation says: v * fl32(1/s), or fl32(v / s); s broadcast over v's columns"""
    if apply == "divide":
        return v / s
    return v * (np.float32(1) / s)


def forward_with(quantize):
    """the quantized forward whose Q is quantize(v, quant) (codes_of here; a buggy example's own)"""

    def forward(x, gamma, eps, residual=None, residual_rounding="rounded", weight_offset=0.0, quant=None,
                scale_kind=None, apply="reciprocal", scale=None, group=None, scale_floor=0.0):
        with np.errstate(all="ignore"):  # Inf and NaN rows are cases too
            if residual is not None:
                h, stored = normalized(x, residual, residual_rounding)
            else:
                h, stored = f32(x), None
            rstd = rstd_of(h, eps)
            g = f32(gamma) + np.float32(weight_offset) if weight_offset != 0.0 else f32(gamma)
            v = (h * rstd[:, None]) * g  # fp32: the y before its rounding
            r = rstd.astype(np.float32)
            if quant is None:  # the plain operator (or residual add): y in x's dtype
                out = (v.astype(x.dtype), r)
            elif scale_kind == "static":
                out = (quantize(scaled(v, np.float32(scale), apply), quant), r)
            else:
                s = dynamic_scales(v, quant, scale_kind, group, scale_floor)
                per_column = s[:, None] if scale_kind == "per_token" else np.repeat(s, group, axis=1)
                out = (quantize(scaled(v, per_column, apply), quant), r, s)
            return out + ((stored,) if residual is not None else ())

    return forward


forward = forward_with(codes_of)
