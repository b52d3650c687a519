"""The document's exercise (SEED.md): seed_triton.py dividing the sum of squares by BLOCK (the
next power of two >= N) instead of N, in the forward and the backward. Invisible when N is a
power of two (N == BLOCK); at N = 257 (BLOCK 512) a row of ones gives y = 1.411458 where the
right value is 0.9999995.

    normcheck replay kernels/examples/seed_design/cases/ones-257.case --kernel kernels/python/examples/seed_triton_block.py   (exit 1)
    normcheck replay kernels/examples/seed_design/cases/ones-256.case --kernel kernels/python/examples/seed_triton_block.py   (exit 0)
"""

from seed_triton import NORMCHECK_CAPABILITIES, launch_backward, launch_forward  # noqa: F401 -- its declaration


def forward(x, gamma, eps):
    return launch_forward(x, gamma, eps, divide_by_block=True)


def backward(dy, x, gamma, r, eps):
    return launch_backward(dy, x, gamma, r, divide_by_block=True)
