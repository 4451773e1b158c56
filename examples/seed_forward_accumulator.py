"""Forward mode with ForwardAccumulator (the tf.autodiff.ForwardAccumulator documentation's examples).

* Nested accumulators give higher-order JVPs: for x**3.5 at 1.1 (float32), 3.5 x**2.5 and 3.5 * 2.5 x**1.5.
* An accumulator around a tape gives a Hessian-vector product (forward over backward).
* For a linear regression loss, one JVP per parameter direction gives one column of the 1-row Jacobian;
  stacked, the columns equal the gradient from one backward pass.
Run: python examples/seed_forward_accumulator.py
"""
import numpy as np

import symgrad as sg

# Higher-order JVPs: take them from the outer accumulator.
primal = sg.constant(1.1, np.float32)
with sg.ForwardAccumulator(primal, 1.0) as outer:
    with sg.ForwardAccumulator(primal, 1.0) as inner:
        primal_out = primal ** 3.5
inner_jvp = inner.jvp(primal_out)
outer_jvp = outer.jvp(inner_jvp)
print("inner JVP", inner_jvp, " outer JVP", outer_jvp)
assert inner_jvp.numpy() == np.float32(4.4417057) and outer_jvp.numpy() == np.float32(10.094786)

# Forward over backward: H v without forming H.
v = sg.Variable(np.array([1.0, 2.0], dtype=np.float32))
with sg.ForwardAccumulator(v, np.array([1.0, 0.0], dtype=np.float32)) as acc:
    with sg.GradientTape() as tape:
        y = np.sum(sg.convert_to_tensor(v) ** 3.0)
    backward = tape.gradient(y, v)
print("gradient", backward, " Hessian-vector product", acc.jvp(backward))
assert backward.numpy().tolist() == [3.0, 12.0] and acc.jvp(backward).numpy().tolist() == [6.0, 0.0]

# Linear regression: JVP columns versus the tape's gradient.
x = np.array([[2.0, 3.0], [1.0, 4.0]])
kernel = sg.Variable(np.array([[0.3], [-0.7]]), name="kernel")
bias = sg.Variable(np.array([0.2]), name="bias")


def loss_fn():
    return np.sum((sg.constant(x) @ kernel + bias - np.array([1.0, -1.0])) ** 2.0)


kernel_fprop = []
for column in ([[1.0], [0.0]], [[0.0], [1.0]]):
    with sg.ForwardAccumulator(kernel, np.array(column)) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()).numpy())
with sg.ForwardAccumulator(bias, np.array([1.0])) as acc:
    bias_fprop = acc.jvp(loss_fn()).numpy()
with sg.GradientTape() as tape:
    loss = loss_fn()
kernel_grad, bias_grad = tape.gradient(loss, (kernel, bias))
print("kernel: JVPs", np.stack(kernel_fprop), " gradient", kernel_grad.numpy().ravel())
print("bias:   JVP ", bias_fprop, " gradient", bias_grad.numpy())
np.testing.assert_allclose(kernel_grad.numpy(), np.stack(kernel_fprop)[:, np.newaxis], rtol=1e-14)
np.testing.assert_allclose(bias_grad.numpy(), bias_fprop[np.newaxis], rtol=1e-14)
