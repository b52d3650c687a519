"""numpy_quantized.py with the saturation clamp missing: a value past the format's largest finite
value (+-448 for e4m3, +-57344 for e5m2) is rounded as if the exponent went on, and its code
truncated to a byte. For e4m3, (464, 496) rounds to S.1111.111, a NaN code; from 496 on the
code wraps into the sign bit (512 -> 0x80, -0; 1024 -> 0x88, -2^-6); +-Inf becomes the NaN code
(a cast with no clamp). Right for every row whose values stay inside the range; caught by

    normcheck check all --kernel kernels/python/examples/numpy_quantized_no_clamp.py --variant rmsnorm_fp8_static
"""

import numpy as np

from numpy_quantized import FP8, NORMCHECK_CAPABILITIES  # noqa: F401 -- the same declaration
from numpy_quantized import forward_with, fp8_magnitude_codes, int8_codes


def fp8_codes_unclamped(v, fmt):
    """the reference's Q without its saturation: the code of |v| computed in a wider integer and
    kept to its low byte"""
    nan_code = FP8[fmt][4]
    a = np.abs(v.astype(np.float64))
    code = fp8_magnitude_codes(np.where(np.isfinite(a), a, 0.0), fmt)  # the bug: no a > largest branch
    code = np.where(np.isinf(a), nan_code, code)
    code = code | np.where(np.signbit(v), 0x80, 0)
    return (np.where(np.isnan(v), nan_code, code) & 0xFF).astype(np.uint8)


def codes_of(v, quant):
    return int8_codes(v) if quant == "int8" else fp8_codes_unclamped(v, quant)


forward = forward_with(codes_of)
