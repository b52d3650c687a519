# Standalone reproducers of the peer campaign's findings of 2026-12-04 (reports/peers/h200-2026-12-04.md),
# torch only: python3 reports/peers/repro_2026_12_04.py on a CUDA machine.
import torch
import torch.nn.functional as F

dev = "cuda"

# (a) r^3 overflows fp32: a row whose mean(x^2) + eps is below ~5e-27 gets NaN dx where the exact
# dx is 0 (dy = 0 here; the same with any dy). eager, torch.compile and the composite formula alike.
def backward_of(fn, xdtype, gdtype):
    x = torch.zeros(1, 8, device=dev, dtype=xdtype, requires_grad=True)
    w = torch.ones(8, device=dev, dtype=gdtype, requires_grad=True)
    y = fn(x, (8,), w, 1e-30)
    dx, dw = torch.autograd.grad(y, (x, w), torch.zeros_like(y))
    return dx

for name, fn in [("eager", F.rms_norm), ("compiled", torch.compile(F.rms_norm))]:
    for xd, gd in [(torch.float32, torch.float32), (torch.bfloat16, torch.float32), (torch.bfloat16, torch.bfloat16)]:
        print(f"(a) {name} x {xd} gamma {gd}: dx of a zero row, eps 1e-30 = {backward_of(fn, xd, gd)[0, :4].tolist()}")

# (c) bits depend on the layout: the same values through a gamma one element off its allocation
# (not 16-byte aligned) take another kernel, whose sum differs in the last bit
torch.manual_seed(0)
x = (torch.rand(1, 408, device=dev) * 4 - 2).half()
g = (torch.rand(409, device=dev) + 0.5).half()
y_view = F.rms_norm(x, (408,), g[1:], 1e-6)
y_copy = F.rms_norm(x, (408,), g[1:].clone(), 1e-6)
print("(c) eager fp16, gamma at offset 1 vs its aligned copy: elements differing:",
      int((y_view != y_copy).sum()), "largest difference", float((y_view.float() - y_copy.float()).abs().max()))
