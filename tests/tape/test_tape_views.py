"""In-place writes through views on the tape (PyTorch's CopySlices): the base's history
becomes "base with the view's region replaced", and every view, made before or after the
write, reads the new value with the new history.

Each program takes Tensors and uses only methods that `torch.Tensor` has too, so the same
program is checked against finite differences here and against PyTorch where it is
installed."""
import numpy as np
import pytest

import runtime as rt
from runtime.check import numerical_grad


def _value(t):
    return np.asarray(t.data if isinstance(t, rt.Tensor) else t)


def tape_grads(prog, arrays):
    leaves = [rt.tensor(a, requires_grad=True) for a in arrays]
    prog(*leaves).backward()
    return [np.zeros_like(a) if t.grad is None else _value(t.grad) for a, t in
            zip(arrays, leaves)]


def fd_grads(prog, arrays):
    def plain(*xs):
        with rt.no_grad():
            return _value(prog(*[rt.tensor(x) for x in xs]))

    return [numerical_grad(plain, arrays, i) for i in range(len(arrays))]


# ---- the programs ---------------------------------------------------------------------------

def slice_mul_scalar(x):
    a = x * 1.0
    a[:2].mul_(3.0)
    return (a * a).sum()


def slice_mul_tensor(x, s):
    a = x * 2.0
    a[1:].mul_(s)
    return (a * a * a).sum()


def slice_add_sub_div(x, y):
    a = x.exp() * 1.0  # (torch saves exp's output for its backward: no writing into it)
    a[::2].add_(y[:2])
    a[1:].sub_(y * y[1:].sum())
    a[:2].div_(y[1:] + 2.0)
    return (a * a).sum()


def transpose_view(m, y):
    a = m * 1.0
    a.T[1].mul_(y)  # column 1 of a
    a.T[2:].add_(m.T[:1] * 2.0)
    return (a * a.sin()).sum()


def reshape_view(x, s):
    a = x * x
    r = a.reshape(2, 3)
    r[1].mul_(s)
    r[:, 0].add_(s[:2])
    return (a * a).sum() + (r * r).sum()


def chain_of_views(m, y):
    a = m * 1.0
    v = a[1:]  # rows 1, 2
    w = v.T[::2]  # columns 0 and 2 of those rows
    w[0].mul_(y[:2])
    w[1:].add_(y[1:] * y[1:])
    return (a * a).sum()


def view_made_before_the_write(x, s):
    a = x * 1.0
    first = a[:3]
    last = a[2:]
    last.mul_(s)  # overlaps first at a[2]
    return (first * first).sum() + (a * a * a).sum()


def the_written_view_itself(x, s):
    a = x + 0.0
    v = a[1:3]
    v.mul_(s)
    v.add_(s * s)
    return (v * v).sum() + a.sum()


def base_write_then_old_view(x, s):
    a = x * 1.0
    v = a[1:]
    a.mul_(s)  # written through the base: the view v sees it
    return (v * v * v).sum()


def setitem_slice(x, y):
    a = x * 1.0
    a[1:3] = y * 2.0
    a[0] = 5.0
    return (a * a * x).sum()


def setitem_broadcast(m, y):
    a = m.exp() * 1.0
    a[:, 1] = y[0]
    a[2] = y * 3.0
    return (a * a).sum()


def setitem_through_a_view(m, y):
    a = m * 1.0
    v = a.T
    v[1, :2] = y[:2]
    return (a * a * m).sum()


def setitem_fancy_index(x, y):
    a = x * 1.0
    a[[0, 3]] = y[:2]
    a[a.detach() > 100.0] = 0.0  # a boolean mask that selects nothing
    return (a * a).sum()


def augmented_assignment_to_an_index(x, y):
    a = x * 1.0
    a[1:] *= y  # Python: view = a[1:]; view *= y; a[1:] = view
    a[:2] += y[:2] ** 2
    a.T[3:] -= x[:1]
    return (a * a).sum()


def into_a_constant(y):
    a = rt.tensor(np.zeros(4)) if isinstance(y, rt.Tensor) else y.new_zeros(4)
    a[1:3] = y * y
    a[3:].add_(y[:1])
    return (a * a).sum()


PROGRAMS = [
    (slice_mul_scalar, [(3,)]),
    (slice_mul_tensor, [(4,), (3,)]),
    (slice_add_sub_div, [(4,), (3,)]),
    (transpose_view, [(3, 4), (3,)]),
    (reshape_view, [(6,), (3,)]),
    (chain_of_views, [(3, 3), (2,)]),
    (view_made_before_the_write, [(5,), (3,)]),
    (the_written_view_itself, [(4,), (2,)]),
    (base_write_then_old_view, [(4,), (4,)]),
    (setitem_slice, [(4,), (2,)]),
    (setitem_broadcast, [(3, 3), (3,)]),
    (setitem_through_a_view, [(3, 3), (3,)]),
    (setitem_fancy_index, [(5,), (3,)]),
    (augmented_assignment_to_an_index, [(4,), (3,)]),
    (into_a_constant, [(2,)]),
]


def _arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, size=s) for s in shapes]


@pytest.mark.parametrize("prog, shapes", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_gradient_through_views_against_finite_differences(prog, shapes):
    arrays = _arrays(shapes)
    for got, want in zip(tape_grads(prog, arrays), fd_grads(prog, arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("prog, shapes", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_gradient_through_views_against_torch(prog, shapes):
    torch = pytest.importorskip("torch")
    arrays = _arrays(shapes)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    prog(*leaves).backward()
    for got, t in zip(tape_grads(prog, arrays), leaves):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- exact values, derived by hand ----------------------------------------------------------

def test_the_slice_write_is_seen_by_later_reads_of_the_base():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    a[:2].mul_(3.0)
    assert _value(a).tolist() == [3.0, 6.0, 3.0]
    (a * a).sum().backward()
    # a = (3x0, 3x1, x2): d/dx sum(a^2) = (18 x0, 18 x1, 2 x2)
    assert _value(x.grad).tolist() == [18.0, 36.0, 6.0]


def test_a_tensor_written_into_a_column():
    m = rt.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    s = rt.tensor([10.0, 20.0], requires_grad=True)
    a = m * 1.0
    a.T[1].mul_(s)  # a[:, 1] = m[:, 1] * s
    a.sum().backward()
    assert _value(m.grad).tolist() == [[1.0, 10.0, 1.0], [1.0, 20.0, 1.0]]
    assert _value(s.grad).tolist() == [1.0, 4.0]  # m[:, 1] = (1, 4)


def test_setitem_replaces_the_gradient_of_the_overwritten_region():
    x = rt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = rt.tensor([5.0, 6.0], requires_grad=True)
    a = x * 1.0
    a[1:3] = y * y
    assert _value(a).tolist() == [1.0, 25.0, 36.0, 4.0]
    (a * 2.0).sum().backward()
    assert _value(x.grad).tolist() == [2.0, 0.0, 0.0, 2.0]  # x[1:3] no longer counts
    assert _value(y.grad).tolist() == [20.0, 24.0]  # d/dy 2 y^2


def test_a_view_made_before_a_write_through_another_view():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    head = a[:2]
    a[1:].mul_(10.0)  # a[1] is shared by head
    assert _value(head).tolist() == [1.0, 20.0]
    (head * head).sum().backward()
    assert _value(x.grad).tolist() == [2.0, 400.0, 0.0]  # head = (x0, 10 x1)


def test_zero_gives_zeros_and_no_gradient_even_at_inf():
    x = rt.tensor([1.0, np.inf, 3.0], requires_grad=True)
    a = x * 2.0
    a[1:].zero_()
    assert _value(a).tolist() == [2.0, 0.0, 0.0]
    a.sum().backward()
    assert _value(x.grad).tolist() == [2.0, 0.0, 0.0]


def test_a_float64_value_written_into_a_float32_base():
    x = rt.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = rt.tensor(np.array([3.0]), requires_grad=True)
    a = x * 1.0
    a[1:].mul_(y)
    assert a.dtype == np.float32 and a.grad_fn is not None
    (a * a).sum().backward()
    assert x.grad.dtype == np.float32 and _value(x.grad).tolist() == [2.0, 36.0]
    assert _value(y.grad).tolist() == [24.0]  # d/dy (2y)^2 = 8y


def test_second_derivative_through_a_write_into_a_view():
    v = np.array([0.2, -0.5, 1.1])

    def grad_dot_v(xv, create_graph):
        x = rt.tensor(xv, requires_grad=True)
        a = x * 1.0
        a[1:].mul_(x[:-1])  # a = (x0, x1 x0, x2 x1)
        (a * a * a).sum().backward(create_graph=create_graph)
        return x, (x.grad * rt.tensor(v)).sum()

    xv = np.array([0.7, 1.3, 0.9])
    x, gv = grad_dot_v(xv, True)
    x.grad = None
    gv.backward()
    want = numerical_grad(lambda xs: _value(grad_dot_v(xs, False)[1]), [xv], 0)
    np.testing.assert_allclose(_value(x.grad), want, rtol=1e-6, atol=1e-7)


# ---- what is refused ------------------------------------------------------------------------

def test_a_write_through_a_view_of_a_leaf_that_requires_grad_raises():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[:2].mul_(2.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 1.0
    assert _value(x).tolist() == [1.0, 2.0, 3.0] and x._version == 0


def test_a_view_made_under_no_grad_cannot_take_a_recorded_write():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    with rt.no_grad():
        v = a[:2]
    with pytest.raises(RuntimeError, match="view made while grad mode was off"):
        v.mul_(x[:2])
    with rt.no_grad():
        v.mul_(2.0)  # an unrecorded write is fine
    assert _value(a).tolist() == [2.0, 4.0, 3.0]


def test_a_node_that_saved_the_base_sees_the_write_and_refuses():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    b = a * a  # saves a
    a[:1].add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_an_index_that_repeats_is_refused_when_recorded():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = rt.tensor([4.0, 5.0], requires_grad=True)
    a = x * 1.0
    with pytest.raises(RuntimeError, match="same memory location"):
        a[[0, 0]] = y
    assert _value(a).tolist() == [1.0, 2.0, 3.0] and a._version == 0


def test_a_value_of_the_wrong_shape_is_refused():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    with pytest.raises(ValueError):
        a[:2].mul_(rt.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError):
        a[:2] = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert _value(a).tolist() == [1.0, 2.0, 3.0]


def test_retain_grad_follows_a_view_and_a_base_through_writes():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    a.retain_grad()
    v = a[1:]
    v.retain_grad()
    a[:2].mul_(5.0)  # a = (5 x0, 5 x1, x2), v = (5 x1, x2)
    (a.sum() * 2.0 + (v * v).sum()).backward()
    assert _value(a.grad).tolist() == [2.0, 2.0 + 20.0, 2.0 + 6.0]
    assert _value(v.grad).tolist() == [20.0, 6.0]  # the gradient of v's present value
