"""normcheck's Python kernel worker: the other end of libnormcheck_python.so (bridge.cpp).

The plugin spawns `python3 -B normcheck_bridge.py SPEC` with its socket on fd 3, stdin on
/dev/null and stdout joined to stderr (a kernel's print() never reaches the harness's report).
A SOCK_SEQPACKET socket makes it the zygote: it imports the kernel's module once, answers the
declaration, then forks a worker for each process that asks (zygote() below); a stream socket
makes it a worker itself. Memory lives in the worker: numpy arrays over memfds the plugin maps
too (numpy_memory.map; or plain numpy arrays where it sends none), or torch uint8 tensors on the
GPU (torch's CPU when there is none). A call gets, per operand, a view of the allocation with
the case's dtype, element offset and strides -- no contiguous copy -- calls the user's
function, writes what it returns into the output views, and checks the inputs' elements are
bit-identical afterwards. kernels/python/README.md documents the spec syntax, the styles, the
declaration and the exception rule.

A variant's call (abi.h "Variants") adds keywords: weight_offset= (when not 0); residual= and
residual_rounding= ("rounded" | "fp32") for a residual add, whose forward returns residual_out
last. A quantized output (an operation declared with "quant") adds quant= ("e4m3" | "e5m2" |
"int8"), scale_kind= ("static" | "per_token" | "per_group") and apply= ("reciprocal" |
"divide"), then scale= (static: a 0-d numpy float32, or a 0-d float32 tensor on the device) or
scale_floor= (a float) and, per group, group= (an int). Its forward returns
    static      (codes, r)                       [+ residual_out]
    per_token   (codes, r, scales (M,))          [+ residual_out]
    per_group   (codes, r, scales (M, N/group))  [+ residual_out]
(r left out without r): codes M x N of one byte, numpy uint8 (int8 too for int8) or torch
float8_e4m3fn / float8_e5m2 / int8 (uint8 too); their bytes go into y at its strides, the
scales into the scale operand at its strides.
"""

import importlib
import importlib.util
import numbers
import os
import re
import socket
import struct
import sys
import traceback
import warnings

# the wire (bridge.cpp): a 16-byte header (u32 op or status, u32 0, u64 payload bytes)
HEADER = struct.Struct("<IIQ")
OP_HELLO, OP_ALLOC, OP_FREE, OP_UPLOAD, OP_DOWNLOAD, OP_COPY, OP_SYNCHRONIZE, OP_FORWARD, OP_BACKWARD = range(1, 10)
# to the zygote: fork a worker (its socket and status pipe attached); to a worker: map a memfd
# (attached) as an allocation. Neither has a reply
OP_FORK, OP_ALLOC_SHARED = 10, 11
NC_OK, NC_ERR_INVALID_ARGUMENT, NC_ERR_UNSUPPORTED, NC_ERR_RUNTIME, NC_ERR_NO_DEVICE = range(5)
# an operand: allocation, byte offset, dtype, element offset, row stride, column stride
OPERAND = struct.Struct("<QQqqqq")
FORWARD = struct.Struct("<qqII")
BACKWARD = struct.Struct("<qq")
# the call's operation (abi.h "Variants"): residual mode, in place, the weight offset's fp32 bits,
# rows, then a quantized output's quant, scale, apply, group and the scale floor's fp32 bits, and a 0
OPERATION = struct.Struct("<IIIIIIIIII")
# heads, the head stride of the message's four 2-D operands, then a 4-D view's tokens a batch
# (0: a 3-D view) and the four operands' batch strides
HEADS = struct.Struct("<qqqqqqqqqq")
NO_HEADS = (1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
RESIDUALS = {"none": 0, "rounded": 1, "fp32": 2}
ROWS = {"matrix": 0, "heads": 1, "batches": 2}
# a quantized output (abi.h nc_quant, nc_scale, nc_scale_apply): y holds one-byte codes
QUANTS = {"none": 0, "e4m3": 1, "e5m2": 2, "int8": 3}
SCALES = {"static": 0, "per_token": 1, "per_group": 2}
APPLIES = {"reciprocal": 0, "divide": 1}
OPERATION_KEYS = ("residual", "in_place", "weight_offset", "rows", "quant", "scale", "apply", "group", "scale_floor")

PAIRS = {"fp32": 1, "fp16": 2, "bf16": 4, "fp16+fp32 gamma": 8, "bf16+fp32 gamma": 16}
LAYOUTS = {"padded_rows": 1, "offsets": 2, "misaligned": 4, "column_strided": 8}
NC_FORWARD_ONLY, NC_NO_R, NC_ROUNDS_NORMALIZED, NC_ROUNDS_GRADIENTS, NC_FLUSHES_SUBNORMALS = 1, 2, 4, 8, 16
DTYPE_NAMES = ("fp32", "fp16", "bf16")
# a rejection names an argument in quotes, as abi.h asks of every plugin
ARGUMENT_NAME = re.compile(r"'(x|gamma|y|r|dy|dx|dgamma|epsilon|eps|m|n|workspace)(\.[a-z_]+)?'")
DECLARATION_KEYS = {"style", "dtypes", "layouts", "forward_only", "writes_r", "epsilons", "max_n",
                    "max_elements", "writes_inputs", "device", "name", "backward", "rounds_normalized",
                    "rounds_gradients", "operations", "n_multiple", "flushes_subnormals"}


class declaration_error(Exception):
    pass


def load_function(spec):
    """python:MODULE[:FUNCTION] or path/to/file.py[:FUNCTION] -> (module, function name)"""
    if spec.startswith("python:"):
        module_name, _, function = spec[len("python:"):].partition(":")
        module = importlib.import_module(module_name)
    else:
        path, function = spec, ""
        if not spec.endswith(".py"):
            path, _, function = spec.rpartition(":")
        if not os.path.isfile(path):
            raise declaration_error(f"kernel '{spec}': no Python file '{path}'")
        name = "normcheck_kernel_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        # the file's folder first on sys.path, so it can import its neighbours
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    function = function or "forward"
    if not callable(getattr(module, function, None)):
        raise declaration_error(f"kernel '{spec}': the module has no function '{function}'")
    return module, function


def fp32_bits(value, what, strict=False):
    """a declared number's fp32 bits; a declaration error when it has none (not a number, past fp32;
    strict: anything but a real number, a bool or a string included)"""
    try:
        if strict and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise TypeError
        return struct.unpack("<I", struct.pack("<f", float(value)))[0]
    except (TypeError, ValueError, OverflowError):
        raise declaration_error(f"{what} = {value!r}: must be a number that fp32 holds") from None


def operation_line(op):
    """one declared operation -> the declaration's "operation" line for bridge.cpp:
    residual, in_place, weight_offset bits (hex), rows, then with a quantized output quant, scale,
    apply, group and scale_floor bits (hex)"""
    where = f"NORMCHECK_CAPABILITIES['operations'] holds {op!r}"
    if not isinstance(op, dict):
        raise declaration_error(f"{where}: each operation is a dict with keys among {list(OPERATION_KEYS)}")
    unknown_op = set(op) - set(OPERATION_KEYS)
    residual = op.get("residual", "none")
    rows = op.get("rows", "matrix")
    if unknown_op or residual not in RESIDUALS or rows not in ROWS:
        raise declaration_error(f"{where}: keys residual ({' | '.join(RESIDUALS)}), in_place, weight_offset, rows "
                                f"({' | '.join(ROWS)}), quant ({' | '.join(QUANTS)}), scale ({' | '.join(SCALES)}), "
                                f"apply ({' | '.join(APPLIES)}), group, scale_floor"
                                + (f"; unknown: {sorted(unknown_op)}" if unknown_op else ""))
    in_place = bool(op.get("in_place", False))
    if in_place and residual == "none":
        raise declaration_error(f"{where}: in_place needs a residual add")
    bits = fp32_bits(op.get("weight_offset", 0.0), f"{where}: 'weight_offset'")
    line = f"{RESIDUALS[residual]}\t{int(in_place)}\t{bits:08x}\t{ROWS[rows]}"
    quant = op.get("quant", "none")
    if quant not in QUANTS:
        raise declaration_error(f"{where}: 'quant' = {quant!r}: must be one of {' | '.join(QUANTS)}")
    if quant == "none":
        given = [k for k in ("scale", "apply", "group", "scale_floor") if k in op]
        if given:
            raise declaration_error(f"{where}: {', '.join(repr(k) for k in given)} "
                                    f"belong{'s' if len(given) == 1 else ''} to a quantized output: "
                                    f"add 'quant': 'e4m3' | 'e5m2' | 'int8'")
        return line
    # a quantized output (abi.h "Quantized output"): forward only, 2-D rows, any residual and offset
    if rows != "matrix":
        raise declaration_error(f"{where}: a quantized output ('quant' = {quant!r}) takes 2-D rows: 'rows' must be "
                                f"'matrix', not {rows!r}")
    if "scale" not in op:
        raise declaration_error(f"{where}: a quantized output needs 'scale': {' | '.join(SCALES)}")
    scale = op["scale"]
    if scale not in SCALES:
        raise declaration_error(f"{where}: 'scale' = {scale!r}: must be one of {' | '.join(SCALES)}")
    apply = op.get("apply", "reciprocal")
    if apply not in APPLIES:
        raise declaration_error(f"{where}: 'apply' = {apply!r}: must be one of {' | '.join(APPLIES)} "
                                f"(v * fl32(1/scale), or fl32(v / scale))")
    group = 0
    if scale == "per_group":
        group = op.get("group")
        if isinstance(group, bool) or not isinstance(group, numbers.Integral) or not 1 <= group < 2 ** 31:
            raise declaration_error(f"{where}: 'group' = {group!r}: per_group scales need 'group', the columns a "
                                    f"group, an int >= 1 (N is then drawn a multiple of it)")
    elif "group" in op:
        raise declaration_error(f"{where}: 'group' belongs to 'scale': 'per_group' only, not {scale!r}")
    floor_bits = 0
    if scale == "static":
        if "scale_floor" in op:
            raise declaration_error(f"{where}: 'scale_floor' belongs to dynamic scales ('per_token', 'per_group'): "
                                    f"a static scale is the caller's")
    else:
        floor = op.get("scale_floor", 0.0)
        floor_bits = fp32_bits(floor, f"{where}: 'scale_floor'", strict=True)
        floor32 = struct.unpack("<f", struct.pack("<I", floor_bits))[0]
        if not (floor32 >= 0.0 and floor32 != float("inf")):
            raise declaration_error(f"{where}: 'scale_floor' = {floor!r}: must be finite and >= 0 (the least "
                                    f"scale written)")
    return line + f"\t{QUANTS[quant]}\t{SCALES[scale]}\t{APPLIES[apply]}\t{int(group)}\t{floor_bits:08x}"


class numpy_memory:
    """allocations as numpy uint8 arrays (host memory)"""

    def __init__(self):
        import numpy
        self.np = numpy
        # numpy has no bf16; the codes of a quantized y (abi.h NC_FP8_E4M3, NC_FP8_E5M2, NC_INT8) as bytes
        self.dtypes = (numpy.float32, numpy.float16, None, numpy.uint8, numpy.uint8, numpy.int8)
        self.backend = "python-numpy"

    def alloc(self, size):
        return self.np.empty(size, dtype=self.np.uint8)

    def warm_up(self):
        pass

    def exercise(self):
        """the zygote runs what a call runs in numpy before it forks (views over a buffer, the
        conversions and reductions of an RMSNorm, byte compares): the caches numpy fills on first
        use are then the zygote's, shared, not each worker's to fill"""
        np = self.np
        buffer = np.zeros(1 << 16, dtype=np.uint8)
        for t in (np.float32, np.float16):
            v = np.ndarray((4, 64), dtype=t, buffer=buffer, offset=64, strides=(256 * np.dtype(t).itemsize,
                                                                                 np.dtype(t).itemsize))
            with np.errstate(all="ignore"):
                f = np.ascontiguousarray(v, dtype=np.float32)
                r = np.float32(1) / np.sqrt(np.sum(f * f, axis=1, dtype=np.float32) / np.float32(64))
                y = (f * r[:, None]).astype(t)
                np.sum(f * y, axis=0, dtype=np.float32).astype(t)
            v[...] = y
            self.extent(v).tobytes() == v.tobytes()

    def map(self, fd, size):
        """the plugin's memfd (a segment of size bytes): the pages its copy() reads and writes"""
        import mmap
        try:
            pages = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        return self.np.frombuffer(pages, dtype=self.np.uint8, count=size)

    def receive(self, ch, buffer, offset, size):
        ch.into(memoryview(buffer)[offset:offset + size])

    def send(self, sock, buffer, offset, size):
        sock.sendall(memoryview(buffer)[offset:offset + size])

    def copy(self, dst, dst_offset, src, src_offset, size):
        dst[dst_offset:dst_offset + size] = src[src_offset:src_offset + size]

    def synchronize(self):
        pass

    def view(self, buffer, byte_offset, dtype, offset, shape, strides):
        np = self.np
        t = np.dtype(self.dtypes[dtype])
        if buffer is None or 0 in shape:
            return np.empty(shape, dtype=t)
        return np.ndarray(shape, dtype=t, buffer=buffer, offset=byte_offset + offset * t.itemsize,
                          strides=tuple(s * t.itemsize for s in strides))

    def snapshot(self, v):
        return self.extent(v).tobytes()  # bits (a NaN equals itself), compared as bytes

    def unchanged(self, v, snap):
        return self.extent(v).tobytes() == snap

    def extent(self, v):
        """v's memory from its first element to its last, as bytes of its allocation (a copy of
        them is a memcpy, where a strided view's copy goes element by element): v itself where it
        is contiguous. The gaps of a strided input are no output's (the harness's guard bytes)"""
        if v.flags.c_contiguous or not isinstance(v.base, self.np.ndarray):
            return v
        low, high = self.np.byte_bounds(v)
        start = low - v.base.__array_interface__["data"][0]
        return v.base.reshape(-1).view(self.np.uint8)[start:start + high - low]

    def name_of(self, v):
        return {self.np.dtype(self.np.float32): "fp32", self.np.dtype(self.np.float16): "fp16"}.get(v.dtype, str(v.dtype))

    def as_result(self, value, like, what):
        np = self.np
        if not isinstance(value, np.ndarray):
            if type(value).__module__.startswith("torch"):
                raise RuntimeError(f"the kernel returned {what} as a torch tensor to a numpy kernel")
            value = np.asarray(value)
        return value

    def store(self, view, value):
        if value is view or view.size == 0:
            return
        view[...] = value

    def private_copy(self, v):
        return v.copy()

    def codes(self, value, view, quant):
        """a quantized y as the kernel returned it -> y's bytes: numpy uint8 (int8 too for int8)"""
        np = self.np
        allowed = (np.dtype(np.uint8),) + ((np.dtype(np.int8),) if quant == "int8" else ())
        if value.dtype not in allowed:
            raise RuntimeError(f"the kernel returned the codes (y) in {value.dtype}: the codes of {quant} are numpy "
                               f"{' or '.join(str(t) for t in allowed)}, one byte an element (the format's bit pattern)")
        return value.view(view.dtype)

    def static_scale(self, view):
        """the static scale (a 1 x 1 fp32 input) for the kernel: a 0-d numpy float32, a copy"""
        return self.np.float32(view[0, 0])


class torch_memory:
    """allocations as torch uint8 tensors on the GPU (torch's CPU when there is none)"""

    def __init__(self, device):
        import torch
        self.torch = torch
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        # the codes of a quantized y as bytes (a kernel may return float8 tensors: they are viewed as bytes)
        self.dtypes = (torch.float32, torch.float16, torch.bfloat16, torch.uint8, torch.uint8, torch.int8)
        self.bits = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
        # element sizes (torch.dtype.itemsize is torch 2.1's)
        self.sizes = {t: torch.empty((), dtype=t).element_size() for t in set(self.dtypes)}
        self.backend = "python-torch-" + self.device.type
        self.staging = None

    def available(self):
        return self.device.type != "cuda" or self.torch.cuda.is_available()

    def exercise(self):
        pass

    def warm_up(self):
        """a worker forked ahead makes its CUDA context while it waits, and loads the kernels the
        bridge's own copies and compares launch (a failure is the first call's to report)"""
        if self.device.type != "cuda":
            return
        torch = self.torch
        try:
            buffer = torch.zeros(1 << 12, dtype=torch.uint8, device=self.device)
            for t in (torch.float32, torch.float16, torch.bfloat16):
                v = self.view(buffer, 64, self.dtypes.index(t), 0, (4, 16), (32, 1))
                snap = self.snapshot(v)
                self.unchanged(v, snap)
                v.copy_(snap)
            self.synchronize()
        except Exception:  # noqa: BLE001
            pass

    def alloc(self, size):
        return self.torch.empty(size, dtype=self.torch.uint8, device=self.device)

    def chunks(self, size):
        step = 64 << 20
        for at in range(0, size, step):
            yield at, min(step, size - at)

    def receive(self, ch, buffer, offset, size):
        torch = self.torch
        if self.device.type == "cpu":
            ch.into(memoryview(buffer.numpy())[offset:offset + size])
            return
        # through a pinned staging buffer, 64 MiB at a time: an 8.6 GB operand needs no host copy of itself
        for at, n in self.chunks(size):
            if self.staging is None or self.staging.numel() < n:
                self.staging = torch.empty(max(n, 1 << 20), dtype=torch.uint8, pin_memory=True)
            ch.into(memoryview(self.staging.numpy())[:n])
            buffer[offset + at:offset + at + n].copy_(self.staging[:n])

    def send(self, sock, buffer, offset, size):
        for at, n in self.chunks(size):
            part = buffer[offset + at:offset + at + n].cpu()
            sock.sendall(memoryview(part.numpy()))

    def copy(self, dst, dst_offset, src, src_offset, size):
        dst[dst_offset:dst_offset + size].copy_(src[src_offset:src_offset + size].clone())

    def synchronize(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def view(self, buffer, byte_offset, dtype, offset, shape, strides):
        torch = self.torch
        t = self.dtypes[dtype]
        if buffer is None or 0 in shape:
            return torch.empty(shape, dtype=t, device=self.device)
        size = self.sizes[t]
        usable = (buffer.numel() - byte_offset) // size * size
        typed = buffer[byte_offset:byte_offset + usable].view(t)
        return torch.as_strided(typed, shape, strides, typed.storage_offset() + offset)

    def snapshot(self, v):
        return v.clone()

    def unchanged(self, v, snap):
        b = self.bits[v.dtype]
        return bool(self.torch.equal(v.view(b), snap.view(b)))

    def name_of(self, v):
        return {self.torch.float32: "fp32", self.torch.float16: "fp16", self.torch.bfloat16: "bf16"}.get(v.dtype, str(v.dtype))

    def as_result(self, value, like, what):
        if not isinstance(value, self.torch.Tensor):
            raise RuntimeError(f"the kernel returned {what} as {type(value).__name__}, not a torch tensor")
        if value.device != like.device:
            raise RuntimeError(f"the kernel returned {what} on {value.device}, the operands are on {like.device}")
        return value

    def store(self, view, value):
        if view.numel() == 0:
            return
        if value.data_ptr() == view.data_ptr() and value.stride() == view.stride() and value.shape == view.shape:
            return
        view.copy_(value)

    def private_copy(self, v):
        return v.clone()

    def codes(self, value, view, quant):
        """a quantized y as the kernel returned it -> y's bytes: a torch float8_e4m3fn, float8_e5m2 or
        int8 tensor as the format says, or its bytes as uint8"""
        torch = self.torch
        names = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "int8": "int8"}[quant]
        allowed = [getattr(torch, names)] if hasattr(torch, names) else []
        allowed.append(torch.uint8)
        if value.dtype not in allowed:
            raise RuntimeError(f"the kernel returned the codes (y) as {value.dtype}: the codes of {quant} are "
                               f"torch.{names} (or their bytes as torch.uint8), one byte an element")
        return value.view(torch.uint8).view(view.dtype)

    def static_scale(self, view):
        """the static scale (a 1 x 1 fp32 input) for the kernel: a 0-d float32 tensor on the
        operands' device, a copy"""
        return view[0, 0].clone()


class channel:
    """a worker's socket, read through a buffer: a batch of messages (bridge.cpp sends the allocs
    and frees that need no reply with the next request) costs one recvmsg, not two a message.
    Descriptors that come with the bytes (SCM_RIGHTS: a new segment's memfd) queue in fds"""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = bytearray(1 << 16)
        self.view = memoryview(self.buffer)
        self.start = self.end = 0
        self.fds = []

    def fill(self):
        """more bytes after what is buffered (moved to the front when the buffer's end is reached)"""
        if self.start == self.end:
            self.start = self.end = 0
        elif self.end == len(self.buffer):
            self.buffer[:self.end - self.start] = self.buffer[self.start:self.end]
            self.start, self.end = 0, self.end - self.start
        n, ancillary, _, _ = self.sock.recvmsg_into([self.view[self.end:]], DESCRIPTORS)
        self.fds.extend(descriptors(ancillary))
        if n == 0:
            raise EOFError
        self.end += n

    def take(self, size):
        """the next size bytes"""
        if size > len(self.buffer):
            data = bytearray(size)
            self.into(memoryview(data))
            return bytes(data)
        while self.end - self.start < size:
            if self.start > 0 and len(self.buffer) - self.start < size:
                self.buffer[:self.end - self.start] = self.buffer[self.start:self.end]
                self.start, self.end = 0, self.end - self.start
            self.fill()
        data = bytes(self.view[self.start:self.start + size])
        self.start += size
        return data

    def into(self, view):
        """the next len(view) bytes into view: what is buffered, then straight from the socket"""
        buffered = min(len(view), self.end - self.start)
        view[:buffered] = self.view[self.start:self.start + buffered]
        self.start += buffered
        view = view[buffered:]
        while len(view) > 0:
            n = self.sock.recv_into(view)
            if n == 0:
                raise EOFError
            view = view[n:]

    def skip(self, size):
        """the next size bytes, read and dropped (an upload to no allocation)"""
        while size > 0:
            part = min(size, len(self.buffer))
            self.into(memoryview(bytearray(part)))
            size -= part


DESCRIPTORS = socket.CMSG_SPACE(64 * 4)  # the most a batch of messages carries (bridge.cpp max_batched_fds)


class kernel:
    """the user's function, its declaration and the memory it works in"""

    def __init__(self, spec):
        self.spec = spec
        module, function = load_function(spec)
        self.function = getattr(module, function)
        declared = dict(getattr(module, "NORMCHECK_CAPABILITIES", None) or {})
        declared.update(getattr(self.function, "normcheck_capabilities", None) or {})
        unknown = set(declared) - DECLARATION_KEYS
        if unknown:
            raise declaration_error(f"NORMCHECK_CAPABILITIES has unknown keys {sorted(unknown)}; "
                                    f"known: {sorted(DECLARATION_KEYS)}")
        self.style = declared.get("style", "functional")
        if self.style not in ("functional", "autograd"):
            raise declaration_error(f"NORMCHECK_CAPABILITIES['style'] = {self.style!r}: must be 'functional' or 'autograd'")
        uses_torch = "torch" in sys.modules or self.style == "autograd" or "device" in declared
        self.memory = torch_memory(declared.get("device")) if uses_torch else numpy_memory()
        self.torch = self.memory.torch if uses_torch else None
        self.name = declared.get("name", spec if spec.startswith("python:") else f"python:{os.path.basename(spec)}")

        # the backward: 'backward' names it; else FUNCTION_backward, else the module's backward
        self.backward_function = None
        if self.style == "functional":
            name = declared.get("backward") or (f"{function}_backward" if hasattr(module, f"{function}_backward") else "backward")
            self.backward_function = getattr(module, name, None)

        numpy_only = not uses_torch
        default_pairs = ["fp32", "fp16", "fp16+fp32 gamma"] if numpy_only else list(PAIRS)
        dtypes = declared.get("dtypes", default_pairs)
        pairs = 0
        for d in dtypes:
            if d not in PAIRS:
                raise declaration_error(f"NORMCHECK_CAPABILITIES['dtypes'] holds {d!r}: must be one of {list(PAIRS)}")
            if numpy_only and "bf16" in d:
                raise declaration_error("NORMCHECK_CAPABILITIES['dtypes'] holds 'bf16': numpy has no bf16 "
                                        "(a torch kernel can serve it)")
            pairs |= PAIRS[d]
        layouts = declared.get("layouts", list(LAYOUTS))
        layout_bits = 0
        for name in layouts:
            if name not in LAYOUTS:
                raise declaration_error(f"NORMCHECK_CAPABILITIES['layouts'] holds {name!r}: must be among {list(LAYOUTS)}")
            layout_bits |= LAYOUTS[name]
        autograd_without_r = self.style == "autograd" and not declared.get("writes_r", False)
        self.writes_r = bool(declared.get("writes_r", self.style == "functional"))
        forward_only = bool(declared.get("forward_only", self.backward_function is None and self.style == "functional"))
        if autograd_without_r:
            # the harness's backward takes the forward's r (abi.h: NC_NO_R needs NC_FORWARD_ONLY)
            forward_only = True
        if not self.writes_r and not forward_only:
            raise declaration_error("NORMCHECK_CAPABILITIES: 'writes_r': False needs 'forward_only': True "
                                    "(the harness's backward takes the forward's r)")
        if not forward_only and self.style == "functional" and self.backward_function is None:
            raise declaration_error(f"kernel '{spec}' declares a backward but the module has no function "
                                    f"'{declared.get('backward', 'backward')}'")
        self.forward_only = forward_only
        if self.style == "autograd" and declared.get("operations"):
            raise declaration_error("NORMCHECK_CAPABILITIES['operations']: the autograd style serves the plain "
                                    "operator only (write a variant's kernel in the functional style)")
        self.writes_inputs = set(declared.get("writes_inputs", []))
        flags = (NC_FORWARD_ONLY if forward_only else 0) | (0 if self.writes_r else NC_NO_R)
        # x_hat = x*r rounded to x's dtype before the gamma multiply (abi.h NC_ROUNDS_NORMALIZED)
        if declared.get("rounds_normalized", False):
            flags |= NC_ROUNDS_NORMALIZED
        # u = dy*gamma and dgamma's terms dy*x_hat rounded to x's dtype (NC_ROUNDS_GRADIENTS)
        if declared.get("rounds_gradients", False):
            flags |= NC_ROUNDS_GRADIENTS
        # fp32 subnormals read and made as zero, as a --use_fast_math build (NC_FLUSHES_SUBNORMALS)
        if declared.get("flushes_subnormals", False):
            flags |= NC_FLUSHES_SUBNORMALS
        # numpy arrays live in host memory, as the simt backend's do: a default size limit
        # leaves out the 8.6 GB far-row property
        max_elements = int(declared.get("max_elements", 1 << 26 if numpy_only else 0))
        self.declaration = [("name", self.name), ("backend", self.memory.backend), ("dtype_pairs", pairs),
                            ("layouts", layout_bits), ("flags", flags), ("max_n", int(declared.get("max_n", 0))),
                            ("max_elements", max_elements)]
        for e in declared.get("epsilons", []):
            self.declaration.append(("epsilon_bits", "%08x" % struct.unpack("<I", struct.pack("<f", e))[0]))
        # the variants (abi.h "Variants"): a list of {"residual": "none" | "rounded" | "fp32",
        # "in_place": bool, "weight_offset": float, "rows": "matrix" | "heads" | "batches"}, and for a
        # quantized output "quant": "e4m3" | "e5m2" | "int8", "scale": "static" | "per_token" |
        # "per_group", "apply": "reciprocal" | "divide", "group": int (per_group), "scale_floor":
        # float (per_token, per_group); absent: the plain operator only. Per-head rows come to the
        # kernel as [tokens, heads, N] views, r as [tokens, heads]; "batches" as [batches, tokens,
        # heads, N] views, r as [batches, tokens, heads]
        for op in declared.get("operations", []):
            self.declaration.append(("operation", operation_line(op)))
        if "n_multiple" in declared:
            self.declaration.append(("n_multiple", int(declared["n_multiple"])))
        if isinstance(self.memory, numpy_memory):
            self.declaration.append(("shares_memory", 1))  # memfds the plugin maps too (OP_ALLOC_SHARED)
        self.allocations = {}

    def declaration_text(self):
        return "".join(f"{k}\t{v}\n" for k, v in self.declaration)

    # ---- operands

    def matrix(self, operand, m, n, heads=1, head_stride=0, tokens=0, batch_stride=0):
        """an M x N operand, or with heads > 1 its [M/heads, heads, N] per-head view, or with
        tokens > 0 its [M/(heads*tokens), tokens, heads, N] 4-D view"""
        allocation, byte_offset, dtype, offset, row_stride, col_stride = operand
        if tokens > 0:
            batches = m // (heads * tokens)
            # a size-1 dimension's stride is never read: 0 keeps the view inside its memory
            shape = (batches, tokens, heads, n)
            strides = (batch_stride if batches > 1 else 0, row_stride if tokens > 1 else 0,
                       head_stride if heads > 1 else 0, col_stride)
        elif heads > 1:
            tokens = m // heads
            shape, strides = (tokens, heads, n), (row_stride if tokens > 1 or row_stride >= 0 else 0, head_stride, col_stride)
        else:
            # a size-1 dimension's stride is meaningless (the contract lets M = 1 have any row stride)
            shape, strides = (m, n), (row_stride if m > 1 or row_stride >= 0 else 0, col_stride)
        return self.memory.view(self.allocations.get(allocation), byte_offset, dtype, offset, shape, strides)

    def vector(self, operand, count, heads=1, tokens=0):
        """count entries, or r's [count/heads, heads] view with heads > 1, its [batches, tokens,
        heads] view with tokens > 0"""
        allocation, byte_offset, dtype, offset, _, stride = operand
        stride = stride if count > 1 or stride >= 0 else 0
        if tokens > 0:
            shape = (count // (heads * tokens), tokens, heads)
            strides = (tokens * heads * stride, heads * stride, stride)
        elif heads > 1:
            shape, strides = (count // heads, heads), (heads * stride, stride)
        else:
            shape, strides = (count,), (stride,)
        return self.memory.view(self.allocations.get(allocation), byte_offset, dtype, offset, shape, strides)

    def result(self, value, view, what):
        value = self.memory.as_result(value, view, what)
        if value.dtype != view.dtype:
            raise RuntimeError(f"the kernel returned {what} in {self.memory.name_of(value)}, "
                               f"the case's '{what}' is {self.memory.name_of(view)}")
        shape = tuple(value.shape)
        if shape != tuple(view.shape):
            if what == "r" and shape in ((view.shape[0], 1),):
                value = value.reshape(view.shape)
            elif what == "scale" and view.shape[1:] == (1,) and shape == view.shape[:1]:
                value = value.reshape(view.shape)  # per-token scales as (M,)
            else:
                raise RuntimeError(f"the kernel returned {what} of shape {shape}, the case's '{what}' is "
                                   f"{tuple(view.shape)}")
        return value

    def call(self, inputs, names, run):
        """run(*inputs) with the inputs checked unchanged afterwards (or given private copies
        where the declaration says the kernel writes them)"""
        given = []
        snapshots = []
        for name, v in zip(names, inputs):
            if name in self.writes_inputs:
                given.append(self.memory.private_copy(v))
            else:
                given.append(v)
                snapshots.append((name, v, self.memory.snapshot(v)))
        out = run(*given)
        for name, v, snap in snapshots:
            if not self.memory.unchanged(v, snap):
                raise input_written(f"the kernel wrote into its input '{name}' (an input must stay as it is; "
                                    f"a kernel that works in place declares 'writes_inputs': ['{name}'])")
        return out

    @staticmethod
    def variant_arguments(operation):
        """the keyword arguments of a call's operation (none for the plain operator): weight_offset,
        and for a residual add residual_rounding ("rounded" | "fp32") beside the operand"""
        residual, offset_bits = operation[0], operation[2]
        offset = struct.unpack("<f", struct.pack("<I", offset_bits))[0]
        kwargs = {"weight_offset": offset} if offset != 0.0 else {}
        if residual != 0:
            kwargs["residual_rounding"] = "rounded" if residual == 1 else "fp32"
        return kwargs

    @staticmethod
    def quantization_of(operation):
        """a quantized output's (quant, scale kind, apply, group, scale floor) by their declaration
        names; None for an operation whose y is in x's dtype"""
        quant, scale, apply, group, floor_bits = operation[4:9]
        if quant == 0:
            return None
        name = {v: k for k, v in QUANTS.items()}
        kind = {v: k for k, v in SCALES.items()}
        how = {v: k for k, v in APPLIES.items()}
        return (name[quant], kind[scale], how[apply], group, struct.unpack("<f", struct.pack("<I", floor_bits))[0])

    def forward(self, m, n, epsilon, x, gamma, y, r, operation=(0,) * 10, residual=None, residual_out=None,
                heads=NO_HEADS, scale=None):
        h, (hx, hy, hres, hout), t, (bx, by, bres, bout) = heads[0], heads[1:5], heads[5], heads[6:]
        xv, gv, yv = self.matrix(x, m, n, h, hx, t, bx), self.vector(gamma, n), self.matrix(y, m, n, h, hy, t, by)
        rv = self.vector(r, m, h, t) if self.writes_r else None
        kwargs = self.variant_arguments(operation)
        adds = operation[0] != 0
        # a quantized output (abi.h "Quantized output"): y is a byte view of the codes; the scale
        # operand is read (static: passed as scale=) or written (dynamic: returned after r)
        quantized = self.quantization_of(operation)
        if quantized:
            quant, kind, apply, group, floor = quantized
            kwargs.update(quant=quant, scale_kind=kind, apply=apply)
            sv = self.matrix(scale, 1 if kind == "static" else m, n // group if kind == "per_group" else 1)
            if kind == "static":
                kwargs["scale"] = self.memory.static_scale(sv)
            else:
                kwargs["scale_floor"] = floor
                if kind == "per_group":
                    kwargs["group"] = group
        inputs, names = (xv, gv), ("x", "gamma")
        if adds:
            # a residual add: the function takes residual=..., returns h (residual_out) last
            inputs, names = (xv, gv, self.matrix(residual, m, n, h, hres, t, bres)), ("x", "gamma", "residual")
            hv = self.matrix(residual_out, m, n, h, hout, t, bout)
        if self.style == "autograd":
            def run(xi, gi, *res):
                with self.torch.no_grad():
                    return self.function(xi, gi, epsilon, **({"residual": res[0]} if res else {}), **kwargs)
        else:
            def run(xi, gi, *res):
                return self.function(xi, gi, epsilon, **({"residual": res[0]} if res else {}), **kwargs)
        out = self.call(inputs, names, run)
        if quantized:
            self.store_quantized(out, quantized, adds, yv, rv, sv, hv if adds else None)
            return
        h_out = None
        if adds:
            if not isinstance(out, (tuple, list)) or len(out) < 2:
                raise RuntimeError("a residual add's forward returns (y, r, residual_out), or (y, residual_out) without r")
            out, h_out = (out[0] if len(out) == 2 else tuple(out[:-1])), out[-1]
        if isinstance(out, (tuple, list)):
            if len(out) != 2:
                raise RuntimeError(f"the forward returned {len(out)} values: must be y or (y, r)")
            y_out, r_out = out
        else:
            y_out, r_out = out, None
        if self.writes_r and r_out is None:
            raise RuntimeError("the forward returned y only, but the kernel declares r "
                               "(declare 'writes_r': False and 'forward_only': True if it computes none)")
        y_out = self.result(y_out, yv, "y")
        if self.writes_r:
            r_out = self.result(r_out, rv, "r")
        if adds:
            h_out = self.result(h_out, hv, "residual_out")
        self.memory.store(yv, y_out)
        if self.writes_r:
            self.memory.store(rv, r_out)
        if adds:  # in place, residual_out is the residual's memory: written after every read of it
            self.memory.store(hv, h_out)
        self.memory.synchronize()

    def store_quantized(self, out, quantized, adds, yv, rv, sv, hv):
        """a quantized forward's results -> its operands: (codes, r) for a static scale, (codes, r,
        scales) for a dynamic one, residual_out appended for a residual add, r left out without r"""
        quant, kind, _, group, _ = quantized
        parts = ["codes"] + (["r"] if self.writes_r else []) + ([] if kind == "static" else ["scales"]) + \
                (["residual_out"] if adds else [])
        values = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(values) != len(parts):
            raise RuntimeError(f"a quantized forward ({quant}, {kind} scale{', a residual add' if adds else ''}) "
                               f"returns ({', '.join(parts)}{',' if len(parts) == 1 else ''}); it returned "
                               f"{len(values)} value{'' if len(values) == 1 else 's'}")
        got = dict(zip(parts, values))
        codes = self.memory.as_result(got["codes"], yv, "y")
        if tuple(codes.shape) != tuple(yv.shape):
            raise RuntimeError(f"the kernel returned the codes (y) of shape {tuple(codes.shape)}, the case's 'y' is "
                               f"{tuple(yv.shape)}")
        codes = self.memory.codes(codes, yv, quant)
        r_out = self.result(got["r"], rv, "r") if self.writes_r else None
        scales = self.result(got["scales"], sv, "scale") if kind != "static" else None
        h_out = self.result(got["residual_out"], hv, "residual_out") if adds else None
        self.memory.store(yv, codes)
        if self.writes_r:
            self.memory.store(rv, r_out)
        if scales is not None:
            self.memory.store(sv, scales)
        if adds:  # in place, residual_out is the residual's memory: written after every read of it
            self.memory.store(hv, h_out)
        self.memory.synchronize()

    def backward(self, m, n, x, gamma, dy, r, dx, dgamma, operation=(0,) * 10, residual_grad=None,
                 heads=NO_HEADS):
        h, (hx, hdy, hdx, hgrad), t, (bx, bdy, bdx, bgrad) = heads[0], heads[1:5], heads[5], heads[6:]
        xv, gv = self.matrix(x, m, n, h, hx, t, bx), self.vector(gamma, n)
        dyv, rv = self.matrix(dy, m, n, h, hdy, t, bdy), self.vector(r, m, h, t)
        dxv, dgv = self.matrix(dx, m, n, h, hdx, t, bdx), self.vector(dgamma, n)
        kwargs = self.variant_arguments(operation)
        kwargs.pop("residual_rounding", None)  # the backward differentiates at the stored h either way
        if operation[0] != 0:
            kwargs["residual_grad"] = self.matrix(residual_grad, m, n, h, hgrad, t, bgrad)
        if self.style == "autograd":
            torch = self.torch

            def run(xi, gi, dyi, ri):
                # leaves sharing the operands' storage and strides (no contiguous copy)
                xl = xi.detach().requires_grad_(True)
                gl = gi.detach().requires_grad_(True)
                with torch.enable_grad():
                    out = self.function(xl, gl, self.epsilon_of_call)
                    y = out[0] if isinstance(out, (tuple, list)) else out
                    return torch.autograd.grad(y, (xl, gl), grad_outputs=dyi, allow_unused=False)
            self.epsilon_of_call = self.last_epsilon
            out = self.call((xv, gv, dyv, rv), ("x", "gamma", "dy", "r"), run)
        else:
            out = self.call((dyv, xv, gv, rv), ("dy", "x", "gamma", "r"),
                            lambda dyi, xi, gi, ri: self.backward_function(dyi, xi, gi, ri, self.last_epsilon, **kwargs))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise RuntimeError("the backward must return (dx, dgamma)")
        dx_out = self.result(out[0], dxv, "dx")
        dg_out = self.result(out[1], dgv, "dgamma")
        self.memory.store(dxv, dx_out)
        self.memory.store(dgv, dg_out)
        self.memory.synchronize()


class input_written(Exception):
    pass


def status_of(error, during):
    """the exception rule (README): NotImplementedError -> unsupported; ValueError or TypeError
    naming an argument in quotes -> a rejection; anything else -> a runtime failure"""
    last = traceback.format_exception_only(type(error), error)[-1].strip()
    where = ""
    frames = traceback.extract_tb(error.__traceback__)
    mine = os.path.abspath(__file__)
    for frame in reversed(frames):
        if os.path.abspath(frame.filename) != mine:
            where = f" (at {os.path.basename(frame.filename)}:{frame.lineno})"
            break
    if isinstance(error, NotImplementedError):
        return NC_ERR_UNSUPPORTED, f"the kernel does not serve this call: {last}{where}"
    if isinstance(error, (ValueError, TypeError)) and ARGUMENT_NAME.search(str(error)):
        return NC_ERR_INVALID_ARGUMENT, f"the kernel rejected the call: {last}{where}"
    if isinstance(error, input_written):
        return NC_ERR_RUNTIME, str(error)
    return NC_ERR_RUNTIME, f"the kernel's {during} raised {last}{where}"


def reply(sock, status, payload=b""):
    if isinstance(payload, str):
        payload = payload.encode("utf-8", "replace")
    sock.sendall(HEADER.pack(status, 0, len(payload)) + payload)


def load(spec):
    """(the kernel, None), or (None, why it does not load) -- any failure to import is the load's error"""
    try:
        return kernel(spec), None
    except BaseException as e:  # noqa: BLE001
        return None, traceback.format_exception_only(type(e), e)[-1].strip()  # kernel::load says which kernel


def serve(sock, k=None, refusal=None):
    """a worker's requests until its socket closes; k: the kernel a zygote loaded (else the
    hello's spec is imported here); refusal: why a forked worker cannot serve (its hello's reply)"""
    ch = channel(sock)
    op, _, size = HEADER.unpack(ch.take(HEADER.size))
    spec = ch.take(size).decode()
    if k is None and refusal is None:
        k, refusal = load(spec)
    if refusal is not None:
        reply(sock, NC_ERR_RUNTIME, refusal)
        return
    reply(sock, NC_OK, k.declaration_text())
    memory = k.memory
    deferred = None  # the failure of a no-reply message, told by the next reply
    segments = {}  # shared memory the plugin keeps across allocations: id -> numpy uint8 array
    while True:
        try:
            op, _, size = HEADER.unpack(ch.take(HEADER.size))
            if op == OP_UPLOAD:
                allocation, offset, n = struct.unpack("<QQQ", ch.take(24))
                if allocation not in k.allocations:
                    ch.skip(n)
                    deferred = deferred or f"an upload failed: no allocation {allocation:#x}"
                    continue
                try:
                    memory.receive(ch, k.allocations[allocation], offset, n)
                except EOFError:
                    raise
                except BaseException as e:  # noqa: BLE001 -- the upload's failure, told by the next reply
                    deferred = deferred or f"an upload failed: {e}"
                continue
            payload = ch.take(size)
        except EOFError:
            return
        if op == OP_FREE:
            # the allocation, then the segment the plugin no longer keeps (0: none)
            address, dropped = struct.unpack("<QQ", payload) if size == 16 else (*struct.unpack("<Q", payload), 0)
            k.allocations.pop(address, None)
            segments.pop(dropped, None)
            continue
        if op == OP_ALLOC_SHARED:
            # an allocation at the start of a segment; a new segment's memfd comes with it
            address, n, segment, capacity = struct.unpack("<QQQQ", payload)
            try:
                if segment not in segments:
                    segments[segment] = memory.map(ch.fds.pop(0), capacity)
                k.allocations[address] = segments[segment][:n]
            except BaseException as e:  # noqa: BLE001
                deferred = deferred or f"an alloc failed: {e}"
            continue
        if deferred is not None:  # this request fails in place of the upload that did
            reply(sock, NC_ERR_RUNTIME, deferred)
            deferred = None
            continue
        try:
            if op == OP_ALLOC:
                address, n = struct.unpack("<QQ", payload)
                k.allocations[address] = memory.alloc(n)
                reply(sock, NC_OK)
            elif op == OP_DOWNLOAD:
                allocation, offset, n = struct.unpack("<QQQ", payload)
                buffer = k.allocations[allocation]
                memory.synchronize()
                sock.sendall(HEADER.pack(NC_OK, 0, n))
                memory.send(sock, buffer, offset, n)
            elif op == OP_COPY:
                dst, dst_offset, src, src_offset, n = struct.unpack("<QQQQQ", payload)
                memory.copy(k.allocations[dst], dst_offset, k.allocations[src], src_offset, n)
                reply(sock, NC_OK)
            elif op == OP_SYNCHRONIZE:
                if isinstance(memory, torch_memory) and not memory.available():
                    reply(sock, NC_ERR_NO_DEVICE, f"no {memory.device.type} device for '{spec}'")
                else:
                    memory.synchronize()
                    reply(sock, NC_OK)
            elif op == OP_FORWARD:
                m, n, eps_bits, _ = FORWARD.unpack_from(payload, 0)
                epsilon = struct.unpack("<f", struct.pack("<I", eps_bits))[0]
                ops = [OPERAND.unpack_from(payload, FORWARD.size + i * OPERAND.size) for i in range(4)]
                at = FORWARD.size + 4 * OPERAND.size
                operation = OPERATION.unpack_from(payload, at)
                residuals = [OPERAND.unpack_from(payload, at + OPERATION.size + i * OPERAND.size) for i in range(2)]
                heads = HEADS.unpack_from(payload, at + OPERATION.size + 2 * OPERAND.size)
                scale = OPERAND.unpack_from(payload, at + OPERATION.size + 2 * OPERAND.size + HEADS.size)
                k.last_epsilon = epsilon
                try:
                    k.forward(m, n, epsilon, *ops, operation, *residuals, heads, scale)
                    reply(sock, NC_OK)
                except BaseException as e:  # noqa: BLE001 -- SystemExit from the kernel included
                    reply(sock, *status_of(e, "forward"))
            elif op == OP_BACKWARD:
                m, n = BACKWARD.unpack_from(payload, 0)
                ops = [OPERAND.unpack_from(payload, BACKWARD.size + i * OPERAND.size) for i in range(6)]
                at = BACKWARD.size + 6 * OPERAND.size
                operation = OPERATION.unpack_from(payload, at)
                residual_grad = OPERAND.unpack_from(payload, at + OPERATION.size)
                heads = HEADS.unpack_from(payload, at + OPERATION.size + OPERAND.size)
                # the backward takes no epsilon in the ABI: the forward's, as a module would keep it
                if not hasattr(k, "last_epsilon"):
                    k.last_epsilon = 1e-6
                try:
                    k.backward(m, n, *ops, operation, residual_grad, heads)
                    reply(sock, NC_OK)
                except BaseException as e:  # noqa: BLE001
                    reply(sock, *status_of(e, "backward"))
            else:
                reply(sock, NC_ERR_RUNTIME, f"the Python worker got an unknown message {op}")
        except (BrokenPipeError, ConnectionResetError):
            return
        except BaseException as e:  # noqa: BLE001 -- a bridge failure is the call's error, the worker lives on
            reply(sock, NC_ERR_RUNTIME, f"the Python bridge failed: {traceback.format_exception_only(type(e), e)[-1].strip()}")


def cuda_initialized():
    """whether this process has initialized the CUDA driver (cuInit, a context): a child forked
    after it cannot use CUDA. Asked of the driver where it is loaded (cuDeviceGetCount answers
    CUDA_ERROR_NOT_INITIALIZED, 3, before cuInit); not loaded, nothing initialized it"""
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    count = ctypes.c_int()
    return driver.cuDeviceGetCount(ctypes.byref(count)) != 3


def zygote(control):
    """the zygote: imports the kernel's module once (torch with it, before any CUDA context exists:
    torch's availability check by NVML, which makes none) and answers the declaration with a line
    "zygote 1", then forks a worker for each OP_FORK packet, until the socket closes. A worker joins
    the asking process's group (the harness's watchdog kills the group), serves its socket, and its
    wait status goes down its status pipe when it ends. A module that made a CUDA context while
    importing cannot be forked ("zygote 0"): the zygote exits, each process spawns its own worker"""
    import select
    import signal
    packet = control.recv(1 << 20)
    _, _, size = HEADER.unpack_from(packet)
    check = "PYTORCH_NVML_BASED_CUDA_CHECK"
    saved = os.environ.get(check)
    os.environ[check] = "1"
    k, refusal = load(packet[HEADER.size:HEADER.size + size].decode())
    if saved is None:
        del os.environ[check]
    else:
        os.environ[check] = saved
    if refusal is not None:
        control.send(HEADER.pack(NC_ERR_RUNTIME, 0, len(refusal.encode())) + refusal.encode())
        return
    forks = not cuda_initialized()
    text = (k.declaration_text() + f"zygote\t{int(forks)}\n").encode()
    control.send(HEADER.pack(NC_OK, 0, len(text)) + text)
    if not forks:
        return
    # numpy's (torch's) first-use caches filled here, then the module's objects in the collector's
    # permanent generation: a worker's collections never write to them, so their pages stay
    # shared with the zygote instead of being copied
    import gc
    k.memory.exercise()
    gc.freeze()
    # SIGCHLD wakes the loop (a byte down the wakeup pipe); SIGINT is the harness's to take
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    statuses = {}  # a live worker's pid -> its status pipe

    def fork_worker():
        """a worker forked ahead of the request it will serve (its copy-on-write faults taken and
        its device context made while the harness runs the property before): (pid, the socket
        its request's socket and group go down)"""
        ours, its = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: "this process is multi-threaded"
            pid = os.fork()
        if pid != 0:
            its.close()
            return pid, ours
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for fd in [wake_r, wake_w, *statuses.values()]:
                os.close(fd)
            control.close()
            ours.close()
            k.memory.warm_up()
            message, ancillary, _, _ = its.recvmsg(HEADER.size + 8, DESCRIPTORS)
            fds = descriptors(ancillary)
            if len(message) != HEADER.size + 8 or len(fds) != 1:
                os._exit(0)  # the zygote is gone
            group = struct.unpack_from("<q", message, HEADER.size)[0]
            its.close()
            refusal = None
            try:
                os.setpgid(0, group)
            except OSError as e:
                refusal = f"the forked Python worker cannot join the process group {group}: {e}"
            worker(socket.socket(fileno=fds[0]), k, refusal)
        finally:
            os._exit(1)

    spare = fork_worker()
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            fd = statuses.pop(pid, None)
            if fd is not None:
                try:
                    os.write(fd, struct.pack("<i", status))
                except OSError:
                    pass  # the asking process is gone
                os.close(fd)
        if control not in ready:
            continue
        message, ancillary, _, _ = control.recvmsg(HEADER.size + 8, DESCRIPTORS)
        if not message:
            return
        fds = descriptors(ancillary)
        if len(message) != HEADER.size + 8 or HEADER.unpack_from(message)[0] != OP_FORK or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        # the spare takes the request (a fresh fork where the spare died waiting), and a new spare
        # warms up for the next one
        for attempt in (spare, None):
            pid, ours = attempt or fork_worker()
            try:
                ours.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("<i", fds[0]))])
                statuses[pid] = fds[1]
                break
            except OSError:
                continue
            finally:
                ours.close()
        else:
            os.close(fds[1])  # neither took it: the asking process's hello fails, it spawns its own
        os.close(fds[0])
        spare = fork_worker()


def descriptors(ancillary):
    """the descriptors (SCM_RIGHTS) of a recvmsg's ancillary data"""
    return [fd for level, kind, data in ancillary if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
            for fd in struct.unpack(f"<{len(data) // 4}i", data[:len(data) // 4 * 4])]


def worker(sock, k=None, refusal=None):
    serve(sock, k, refusal)
    sock.close()
    # no interpreter teardown: a kernel's atexit handlers and a CUDA context's shutdown are not
    # the harness's business
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def keep_freed_memory():
    """glibc keeps what a call frees for the next call: a numpy temporary of a few hundred KiB is
    otherwise its own mmap (or the heap's top, trimmed when freed), and the next call faults every
    page of it in again, a third of a small call's time. Blocks up to 32 MiB come from the heap,
    which is trimmed past 512 MiB free (mallopt; a worker lives one property)"""
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 512 << 20)
    except (OSError, AttributeError):
        pass  # not glibc: its own defaults


def main():
    keep_freed_memory()
    sock = socket.socket(fileno=3)
    if sock.type == socket.SOCK_SEQPACKET:
        zygote(sock)
        os._exit(0)
    worker(sock)


if __name__ == "__main__":
    main()
