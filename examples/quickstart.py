"""A walkthrough of rustgrad's autograd, written the way PyTorch users write it.

Run it with `make demo`. Every line it prints is what PyTorch prints for the
same program (except `.volatile`, a legacy flag that modern PyTorch dropped and
rustgrad keeps: see the last section).
"""

import rustgrad as torch
from rustgrad.autograd import Variable

# --- requires_grad flows forward ------------------------------------------------
# An op's output requires grad as soon as one of its inputs does.
print("-- requires_grad")
x = Variable(torch.rand(5, 5))
y = Variable(torch.rand(5, 5))
z = Variable(torch.rand(5, 5), requires_grad=True)
a = x + y
print(a.requires_grad)  # False: no input requires grad
b = a + z
print(b.requires_grad)  # True: z does

# --- a small graph and its gradient ---------------------------------------------
print("-- backward")
x = Variable(torch.ones(2, 2), requires_grad=True)
print(x)
y = x + 2
print(y)  # grad_fn=<AddBackward0>: y was created by an op
z = y * y * 3
print(z)
out = z.mean()
print(out)  # a scalar: 27
out.backward()  # d(out)/dx = 6 * (x + 2) / 4 = 4.5
print(x.grad)

# --- freezing: only what requires grad gets a gradient --------------------------
# Fine-tuning in miniature: the "pretrained" weights are frozen, the new head is
# trained. Frozen leaves get no .grad, and backward does not even visit them.
print("-- freezing")
pretrained = [torch.randn(4, 4, requires_grad=True) for _ in range(2)]
for weight in pretrained:
    weight.requires_grad = False
head = torch.randn(4, 2, requires_grad=True)  # a new layer: requires grad
features = torch.randn(3, 4)
hidden = features @ pretrained[0] @ pretrained[1]
print(hidden.requires_grad)  # False: nothing upstream requires grad
loss = (hidden @ head).sum()
print(loss.requires_grad)  # True: head does
loss.backward()
print([weight.grad is None for weight in pretrained], head.grad is not None)

# --- volatile: the legacy inference switch --------------------------------------
# One volatile input is enough: the output is volatile, requires no grad and has
# no grad_fn, even though the parameter w requires grad. Nothing is recorded.
# (Modern code uses `with torch.no_grad():` instead.)
print("-- volatile")
volatile_input = Variable(torch.randn(1, 3), volatile=True)
w = torch.nn.Parameter(torch.randn(3, 2))
out = volatile_input @ w
print(out.requires_grad, out.volatile, out.grad_fn is None)  # False True True
