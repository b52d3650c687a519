"""Kernels that misbehave rather than miscompute: each must get a verdict (exit 1), never a
pass and never the harness's death.

    misbehaving.py:raises     raises an exception
    misbehaving.py:sys_exit   calls sys.exit(0) (SystemExit, caught by the bridge)
    misbehaving.py:os_exit    calls os._exit(0): the interpreter is gone mid-call
    misbehaving.py:hangs      never returns (the harness's watchdog, NORMCHECK_CALL_TIMEOUT)
    misbehaving.py:in_place   a correct kernel whose backward writes dx into dy (as Liger's
                              in_place=True does) without declaring it
    misbehaving.py:exits_in_backward  a correct forward whose backward calls os._exit(3): the
                              backward's properties fail, the forward's pass (a crash costs
                              only its property's worker)
"""

import os
import sys
import time

import numpy as np

from numpy_reference import NORMCHECK_CAPABILITIES, backward, forward  # noqa: F401


def raises(x, gamma, eps):
    raise RuntimeError("this kernel always fails")


def sys_exit(x, gamma, eps):
    sys.exit(0)


def os_exit(x, gamma, eps):
    os._exit(0)


def hangs(x, gamma, eps):
    time.sleep(3600)


def in_place(x, gamma, eps):
    return forward(x, gamma, eps)


def in_place_backward(dy, x, gamma, r, eps):
    dx, dgamma = backward(dy, x, gamma, r, eps)
    dy[...] = dx  # the defect: the input becomes the output
    return dy, dgamma


def exits_in_backward(x, gamma, eps):
    return forward(x, gamma, eps)


def exits_in_backward_backward(dy, x, gamma, r, eps):
    os._exit(3)
