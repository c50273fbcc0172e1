"""Higher derivatives, forward mode, Jacobians and custom rules.

- `grad(grad(f))` and `grad(grad(grad(f)))` of scalar functions (elementwise primitives by
  their numpy spellings, a branch, a loop, mixed partials) against the tape engine's
  `backward(create_graph=True)` and against finite differences of the lower derivative;
- `hessian(f)` (shape x.shape + x.shape) against finite differences of `grad(f)` and
  against the tape, on Rosenbrock, log-sum-exp, a small MLP loss, a branch and a loop;
  `hvp(f)(x, v) == hessian(f)(x) @ v`;
- `jvp` against `fun` and finite differences, and the identity <u, J t> == <J^T u, t>
  against `vjp` on random programs from tests/programs.py;
- `jacobian(mode="rev")` == `jacobian(mode="fwd")` == finite differences;
- `show(mode="jvp")`, the scalar-output check of `hessian`;
- custom primitives (`srcgrad.primitive`, `defvjp`, `defjvp`) in compiled code and on the
  tape, and their errors; `stop_gradient`.
Each bug these tests found has a test of its own here (they were strict xfails until fixed).
"""
from __future__ import annotations

import importlib.util
import inspect
import io
import linecache
import warnings

import numpy as np
import pytest
from hypothesis import given, settings

import runtime as rt
import srcgrad
from compiler_helpers import assert_close, finite_differences, tape_grads
from programs import programs

FD_EPS = 1e-5  # step for finite differences of an (analytic) derivative
RTOL, ATOL = 1e-6, 1e-7


# ---- helpers ------------------------------------------------------------------------------------

def fd_derivative(fn, x, *rest, eps=FD_EPS):
    """Central differences of `fn(x, *rest)` w.r.t. x: shape fn(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    out_shape = np.shape(fn(x.copy(), *rest))
    cols = []
    for k in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[k] += eps
        lo[k] -= eps
        cols.append((np.asarray(fn(hi, *rest), dtype=np.float64)
                     - np.asarray(fn(lo, *rest), dtype=np.float64)).reshape(-1) / (2 * eps))
    if not cols:
        return np.zeros(out_shape + x.shape)
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def fd_scalar(fn, x, *rest, eps=FD_EPS):
    """Central difference of a scalar function of a Python float."""
    return (float(fn(x + eps, *rest)) - float(fn(x - eps, *rest))) / (2 * eps)


def tape_derivatives(fn, x0, order, *rest):
    """[f', f'', ...] at the Python float x0, the PyTorch way: backward(create_graph=True),
    take x.grad, zero it, backward again from x.grad.sum()."""
    x = rt.tensor(float(x0), requires_grad=True)
    cur = fn(x, *rest)
    found = []
    for k in range(order):
        cur.sum().backward(create_graph=k < order - 1)
        g = x.grad
        x.grad = None
        found.append(float(g.data))
        cur = g
    return found


def tape_hessian(fn, x0, *rest):
    """The tape's Hessian of scalar fn at the 1-D array x0, one row per backward."""
    x = rt.tensor(np.array(x0, dtype=np.float64), requires_grad=True)
    fn(x, *rest).backward(create_graph=True)
    g = x.grad
    rows = []
    for k in range(x0.size):
        x.grad = None
        g[k].backward(retain_graph=True)
        rows.append(np.zeros(x0.shape) if x.grad is None else np.asarray(x.grad.data))
    return np.stack(rows)


def close(actual, expected, what, rtol=RTOL, atol=ATOL):
    assert_close(actual, expected, rtol, atol, what)


# ---- grad of grad on scalar inputs --------------------------------------------------------------

def f_sin(x):
    return np.sin(x)


def f_cos_sq(x):
    return np.cos(x) * np.cos(x)


def f_exp(x):
    return np.exp(2.0 * x)


def f_log(x):
    return np.log(x)


def f_tanh(x):
    return np.tanh(x)


def f_sqrt(x):
    return np.sqrt(x)


def f_cube(x):
    return x ** 3


def f_power(x):
    return np.power(x, 2.5)


def f_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def f_arctan(x):
    return np.arctan(x)


def f_log1p(x):
    return np.log1p(x * x)


def f_expm1(x):
    return np.expm1(x)


def f_sinh_cosh(x):
    return np.sinh(x) * np.cosh(x)


def f_reciprocal(x):
    return 1.0 / x


def f_product(x):
    return np.sin(x) * x ** 3 + np.exp(-x * x)


def f_square(x):
    return np.square(np.sin(x))


ELEMENTWISE = [f_sin, f_cos_sq, f_exp, f_log, f_tanh, f_sqrt, f_cube, f_power, f_sigmoid,
               f_arctan, f_log1p, f_expm1, f_sinh_cosh, f_reciprocal, f_product, f_square]
POINTS = (0.7, 1.6)  # positive: log, sqrt and the reciprocal are defined there


def f_branch(x):
    if x > 0:
        y = np.sin(x) * x ** 2
    else:
        y = np.exp(x) * x
    return y


def f_loop(x, n):
    y = x
    for i in range(n):
        y = np.sin(y) * x
    return y


def f_while(x):
    y = x
    while abs(y) < 10.0:
        y = y * 2.0 + np.sin(x)
    return y * x


@pytest.mark.parametrize("fn", ELEMENTWISE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x0", POINTS)
def test_second_and_third_derivatives_of_elementwise_functions(fn, x0):
    d1 = srcgrad.grad(fn)
    d2 = srcgrad.grad(d1)
    d3 = srcgrad.grad(d2)
    got = [float(d1(x0)), float(d2(x0)), float(d3(x0))]
    assert np.ndim(d2(x0)) == 0 and np.ndim(d3(x0)) == 0
    close(got, tape_derivatives(fn, x0, 3), "srcgrad vs the tape's create_graph", 1e-10, 1e-12)
    close(got[1], fd_scalar(d1, x0), "d2 vs finite differences of d1")
    close(got[2], fd_scalar(d2, x0), "d3 vs finite differences of d2")


@pytest.mark.parametrize("x0", (0.7, -0.6, 1.3))
def test_nested_grad_through_a_branch(x0):
    ds = [srcgrad.grad(f_branch)]
    ds += [srcgrad.grad(ds[-1])]
    ds += [srcgrad.grad(ds[-1])]
    got = [float(d(x0)) for d in ds]
    close(got, tape_derivatives(f_branch, x0, 3), "srcgrad vs tape", 1e-10, 1e-12)
    close(got[1], fd_scalar(ds[0], x0), "d2 vs finite differences")
    close(got[2], fd_scalar(ds[1], x0), "d3 vs finite differences")
    if x0 > 0:  # the branch taken: sin(x) x^2, whose second derivative is known
        exact = -np.sin(x0) * x0 ** 2 + 4 * x0 * np.cos(x0) + 2 * np.sin(x0)
    else:  # x e^x
        exact = (x0 + 2) * np.exp(x0)
    close(got[1], exact, "d2, closed form", 1e-12, 1e-12)


@pytest.mark.parametrize("n", (0, 1, 3, 5))
@pytest.mark.parametrize("x0", (0.7, -0.4))
def test_nested_grad_through_a_loop(n, x0):
    d1 = srcgrad.grad(f_loop)
    d2 = srcgrad.grad(d1)
    d3 = srcgrad.grad(d2)
    got = [float(d1(x0, n)), float(d2(x0, n)), float(d3(x0, n))]
    if n == 0:  # f(x) = x: the tape's first derivative is a constant with no graph
        assert got == [1.0, 0.0, 0.0]
    else:
        close(got, tape_derivatives(f_loop, x0, 3, n), "srcgrad vs tape", 1e-10, 1e-12)
    close(got[1], fd_scalar(d1, x0, n), "d2 vs finite differences")
    close(got[2], fd_scalar(d2, x0, n), "d3 vs finite differences")


@pytest.mark.parametrize("x0", (0.7, -0.6))
def test_nested_grad_through_a_while_loop(x0):
    d1 = srcgrad.grad(f_while)
    d2 = srcgrad.grad(d1)
    got = [float(d1(x0)), float(d2(x0))]
    close(got, tape_derivatives(f_while, x0, 2), "srcgrad vs tape", 1e-10, 1e-12)
    close(got[1], fd_scalar(d1, x0), "d2 vs finite differences")


def f_two(x, y):
    return np.sin(x * y) * x ** 2 + np.exp(y) * x


def test_mixed_partials_are_symmetric_and_match_finite_differences():
    x, y = 0.7, 1.3
    dxy = srcgrad.grad(srcgrad.grad(f_two, wrt=0), wrt=1)(x, y)
    dyx = srcgrad.grad(srcgrad.grad(f_two, wrt="y"), wrt="x")(x, y)
    close(dxy, dyx, "d/dy d/dx vs d/dx d/dy", 1e-12, 1e-12)
    dx = srcgrad.grad(f_two, wrt=0)
    close(dxy, (dx(x, y + FD_EPS) - dx(x, y - FD_EPS)) / (2 * FD_EPS), "mixed partial vs fd")
    dxx = srcgrad.grad(srcgrad.grad(f_two, wrt=0), wrt=0)(x, y)
    close(dxx, (dx(x + FD_EPS, y) - dx(x - FD_EPS, y)) / (2 * FD_EPS), "d2/dx2 vs fd")


def f_scalar_and_weights(x, w):
    return np.sum(np.tanh(w * x) * w)


def test_outer_grad_with_respect_to_an_array():
    """The inner gradient (w.r.t. the scalar x) is a scalar; its gradient w.r.t. the array
    w has w's shape."""
    x, w = 0.4, np.array([[0.5, -1.0, 2.0], [0.1, 0.3, -0.7]])
    got = srcgrad.grad(srcgrad.grad(f_scalar_and_weights, wrt=0), wrt=1)(x, w)
    assert np.shape(got) == w.shape
    dx = srcgrad.grad(f_scalar_and_weights, wrt=0)
    close(got, fd_derivative(lambda ww: dx(x, ww), w), "d/dw (df/dx) vs finite differences")


def tanh_of(X):
    return np.tanh(X) * 2.0


def cubes(X):
    return np.sum(X ** 3 * np.arange(1.0, X.size + 1).reshape(X.shape))


def doubled_transposed(X):
    return (X * 2.0).T


def test_derivative_matrices_of_arrays_in_fortran_order():
    """jacobian (both modes), hessian and grad(grad) of arrays that are transposed views (or
    return one) equal those of the same values in C order: their unit vectors are written
    through a flat view, which a Fortran-ordered zeros_like made a copy (all zeros, no
    error)."""
    A = (np.arange(1.0, 7.0).reshape(3, 2) / 10).T  # a (2, 3) view in Fortran order
    C = np.ascontiguousarray(A)
    for f, mode in ((tanh_of, "rev"), (tanh_of, "fwd"), (doubled_transposed, "rev"),
                    (doubled_transposed, "fwd")):
        want = srcgrad.jacobian(f, mode=mode)(C)
        assert np.abs(want).sum() > 0
        close(srcgrad.jacobian(f, mode=mode)(A), want, f"jacobian {mode} of {f.__name__}")
    want = srcgrad.hessian(cubes)(C)
    assert np.abs(want).sum() > 0
    close(srcgrad.hessian(cubes)(A), want, "hessian")
    x = 0.4
    gg = srcgrad.grad(srcgrad.grad(f_scalar_and_weights, wrt=0), wrt=1)
    close(gg(x, np.asfortranarray(np.tile(A, (2, 1)))), gg(x, np.tile(C, (2, 1))), "grad(grad)")


def test_nested_grad_needs_a_scalar_inner_gradient():
    with pytest.raises(TypeError, match="scalar"):
        srcgrad.grad(srcgrad.grad(f_sin))(np.array([0.1, 0.2]))


def test_nested_grad_of_a_zero_dimensional_array():
    got = srcgrad.grad(srcgrad.grad(f_sin))(np.array(0.7))
    assert np.shape(got) == ()
    close(got, -np.sin(0.7), "-sin", 1e-12, 1e-12)


def sum_sin(x):
    return np.sum(np.sin(x))


def test_nested_grad_of_a_size_one_array():
    """x of shape (1,): the inner gradient has one element, which grad of grad accepts."""
    got = srcgrad.grad(srcgrad.grad(sum_sin))(np.array([0.7]))
    assert np.shape(got) == (1,)
    close(got, [-np.sin(0.7)], "-sin", 1e-12, 1e-12)


def f_loop_affine(x):
    y = x
    for i in range(3):
        y = np.sin(y) + 0.5
    return y


def test_nested_grad_through_a_loop_with_a_float_carried_cotangent():
    """The loop's carried cotangent starts as the Python float seed 1.0."""
    d1 = srcgrad.grad(f_loop_affine)
    d2 = srcgrad.grad(d1)
    got = [float(d1(0.7)), float(d2(0.7))]
    close(got, tape_derivatives(f_loop_affine, 0.7, 2), "srcgrad vs tape", 1e-10, 1e-12)
    close(got[1], fd_scalar(d1, 0.7), "d2 vs finite differences")


# ---- Hessians and Hessian-vector products -------------------------------------------------------

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


MLP_X = np.random.default_rng(0).standard_normal((5, 3))
MLP_Y = np.random.default_rng(1).standard_normal(5)
MLP_SIZE = 3 * 4 + 4 + 4 + 1


def mlp_loss(theta, X, y):
    W1 = np.reshape(theta[:12], (3, 4))
    b1 = theta[12:16]
    w2 = theta[16:20]
    b2 = theta[20]
    h = np.tanh(X @ W1 + b1)
    pred = h @ w2 + b2
    return np.mean((pred - y) ** 2)


def branchy(x):
    if np.sum(x) > 0:
        y = np.sum(np.exp(x) * x) + x[0] * x[-1]
    else:
        y = np.sum(x ** 4) - np.prod(x)
    return y


def loopy(x, n=4):
    y = x
    for i in range(n):
        y = np.tanh(y) * x + 0.5 * y[::-1]
    return np.sum(y ** 2)


def _rng_x(seed, shape, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


HESSIAN_CASES = [
    ("rosenbrock", rosenbrock, _rng_x(1, 6, -1.5, 1.5), ()),
    ("logsumexp", logsumexp, _rng_x(2, 5, -2.0, 2.0), ()),
    ("mlp", mlp_loss, _rng_x(3, MLP_SIZE), (MLP_X, MLP_Y)),
    ("branch+", branchy, _rng_x(4, 4, 0.1, 1.0), ()),
    ("branch-", branchy, _rng_x(5, 4, -1.0, -0.1), ()),
    ("loop", loopy, _rng_x(6, 5), ()),
]


@pytest.mark.parametrize("name, fn, x, rest", HESSIAN_CASES, ids=[c[0] for c in HESSIAN_CASES])
def test_hessian(name, fn, x, rest):
    H = srcgrad.hessian(fn, wrt=0)(x, *rest)
    assert H.shape == x.shape + x.shape
    assert H.dtype == np.float64
    close(H, H.T, "symmetry", 1e-10, 1e-10)
    g = srcgrad.grad(fn, wrt=0)
    scale = 1.0 + np.max(np.abs(H))
    close(H, fd_derivative(g, x, *rest), "hessian vs finite differences of grad", 1e-6,
          1e-7 * scale)
    close(H, tape_hessian(fn, x, *rest), "hessian vs the tape", 1e-9, 1e-10 * scale)


@pytest.mark.parametrize("name, fn, x, rest", HESSIAN_CASES, ids=[c[0] for c in HESSIAN_CASES])
def test_hvp_is_hessian_times_v(name, fn, x, rest):
    v = np.random.default_rng(7).standard_normal(x.shape)
    hv = srcgrad.hvp(fn, wrt=0)(x, *rest, v)
    assert np.shape(hv) == x.shape
    H = srcgrad.hessian(fn, wrt=0)(x, *rest)
    close(hv, H @ v, "hvp vs H @ v", 1e-10, 1e-10 * (1 + np.max(np.abs(H))))


def trace_of_power(A):
    B = A
    for _ in range(3):
        B = B @ A
    return np.trace(B)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_hvp_of_a_loop_whose_seed_is_a_constant_array(backend):
    """In a specialized variant the seed of `trace` folds to a constant identity matrix;
    its tangent (the initial value of a carried tangent) was the scalar 0.0 instead of
    zeros of the matrix's shape, and the adjoint matmul raised."""
    if backend == "numba" and importlib.util.find_spec("numba") is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(3)
    A, v = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    g = srcgrad.grad(trace_of_power)
    eps = 1e-6
    expected = (g(A + eps * v) - g(A - eps * v)) / (2 * eps)
    hvp = srcgrad.hvp(trace_of_power, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error" if backend == "numpy" else "ignore")
        for _ in range(3):  # the first call, then the specialized variant
            close(hvp(A, v), expected, "hvp vs finite differences of grad", 1e-6, 1e-6)


def test_hessian_closed_forms():
    x = np.array([0.3, -1.2, 2.0, 0.5])
    p = np.exp(x) / np.sum(np.exp(x))
    close(srcgrad.hessian(logsumexp)(x), np.diag(p) - np.outer(p, p), "softmax Jacobian",
          1e-12, 1e-12)
    x = np.array([1.0, 1.0, 1.0])  # Rosenbrock's minimum
    expected = np.array([[802.0, -400.0, 0.0], [-400.0, 1002.0, -400.0],
                         [0.0, -400.0, 200.0]])
    close(srcgrad.hessian(rosenbrock)(x), expected, "Rosenbrock at its minimum", 1e-12, 1e-12)


def logsumexp_2d(X):
    return np.log(np.sum(np.exp(X)))


def test_hessian_of_a_matrix_argument_has_four_axes():
    X = _rng_x(8, (2, 3))
    H = srcgrad.hessian(logsumexp_2d)(X)
    assert H.shape == (2, 3, 2, 3)
    close(H, fd_derivative(srcgrad.grad(logsumexp_2d), X), "vs finite differences")
    p = (np.exp(X) / np.sum(np.exp(X))).reshape(-1)
    close(H.reshape(6, 6), np.diag(p) - np.outer(p, p), "closed form", 1e-12, 1e-12)


def test_hessian_with_respect_to_a_named_argument():
    w = np.array([0.2, -0.4, 0.6])
    H = srcgrad.hessian(f_scalar_and_weights, wrt="w")(0.9, w)
    close(H, fd_derivative(lambda ww: srcgrad.grad(f_scalar_and_weights, wrt=1)(0.9, ww), w),
          "vs finite differences")


def vector_valued(x):
    return np.sin(x) * 2.0


def test_hessian_of_a_non_scalar_function_raises_type_error():
    with pytest.raises(TypeError, match="scalar"):
        srcgrad.hessian(vector_valued)(np.array([0.1, 0.2]))


def accumulate(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x) * s + x ** 2)
    return s


def test_hessian_of_a_loop_accumulating_a_float():
    """The accumulator starts as the Python float 0.0, and so does its cotangent."""
    x = np.array([0.7, 0.2])
    H = srcgrad.hessian(accumulate)(x)
    close(H, fd_derivative(srcgrad.grad(accumulate), x), "vs finite differences")
    close(H, tape_hessian(accumulate, x), "vs the tape", 1e-9, 1e-9)


def rnn_loss(w, xs):
    h = 0.0
    hs = []
    for i in range(xs.shape[0]):
        h = np.tanh(w * h + xs[i])
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def test_second_derivative_through_a_list_grown_in_a_loop():
    xs = np.array([0.1, -0.3, 0.5])
    d1 = srcgrad.grad(rnn_loss)
    got = srcgrad.hessian(rnn_loss)(np.array(0.4), xs)
    close(got, fd_scalar(d1, 0.4, xs), "vs finite differences")


# ---- forward mode: jvp --------------------------------------------------------------------------

def two_inputs(x, w):
    return np.tanh(x @ w) * np.sum(x ** 2)


def test_jvp_returns_the_value_and_the_directional_derivative():
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    tx, tw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    out, tout = srcgrad.jvp(two_inputs, (x, w), (tx, tw))
    close(out, two_inputs(x, w), "out == fun(*primals)", 1e-15, 0)
    eps = 1e-6
    num = (two_inputs(x + eps * tx, w + eps * tw) - two_inputs(x - eps * tx, w - eps * tw)) \
        / (2 * eps)
    close(tout, num, "tangent vs finite differences", 1e-6, 1e-8)
    # None means a zero tangent
    _, t_only_x = srcgrad.jvp(two_inputs, (x, w), (tx, None))
    _, t_only_w = srcgrad.jvp(two_inputs, (x, w), (None, tw))
    close(t_only_x + t_only_w, tout, "linearity in the tangents", 1e-12, 1e-12)


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("jvp_programs"))


@settings(max_examples=30)
@given(program=programs())
def test_jvp_and_vjp_satisfy_the_inner_product_identity(program_dir, program):
    """<u, J t> == <J^T u, t> for random straight-line programs (scalar output: u is a
    scalar cotangent), with tangents on every parameter."""
    fn = getattr(program.load(program_dir), program.name)
    # parameters go in as 0-d arrays here; Python floats have a test of their own below
    args = [np.asarray(a, dtype=np.float64) for a in program.args]
    rng = np.random.default_rng(len(program.source))
    ts = [rng.standard_normal(a.shape) for a in args]
    note = f"\n{program.source}"
    out, tout = srcgrad.jvp(fn, tuple(args), tuple(ts))
    close(out, fn(*args), "out == fun(*primals)" + note, 1e-12, 1e-12)
    assert np.shape(tout) == np.shape(out), note
    out2, pullback = srcgrad.vjp(fn, *args, wrt=tuple(range(len(args))))
    u = 1.7
    cts = pullback(u)
    lhs = u * float(tout)
    rhs = sum(float(np.sum(c * t)) for c, t in zip(cts, ts))
    scale = 1.0 + sum(float(np.sum(np.abs(c * t))) for c, t in zip(cts, ts))
    close(lhs, rhs, "<u, J t> vs <J^T u, t>" + note, 1e-9, 1e-10 * scale)


def add_and_sum(a, b):
    v = a + b
    return np.sum(v)


def test_jvp_accepts_python_float_primals():
    out, tout = srcgrad.jvp(add_and_sum, (np.ones(3), 0.5), (np.ones(3), 1.0))
    close(out, 4.5, "value", 0, 0)
    close(tout, 6.0, "tangent", 0, 0)


def test_show_prints_the_tangent_code():
    buf = io.StringIO()
    srcgrad.show(vector_valued, mode="jvp", file=buf)
    text = buf.getvalue()
    assert "def jvp_vector_valued(x, tx):" in text
    assert "np.cos(x)" in text  # the tangent of sin, as code
    buf = io.StringIO()
    srcgrad.show(rosenbrock, mode="hvp", file=buf)
    assert "def hvp_rosenbrock(" in buf.getvalue()


# ---- Jacobians ----------------------------------------------------------------------------------

def jac_elementwise(x):
    return np.sin(x) * x[::-1] + x ** 2


def jac_matrix(X):
    return X @ X.T + np.exp(X[:, :1])


def jac_reduce(x):
    return np.stack([np.sum(x ** 2), np.prod(x), np.max(x)])


def jac_loop(x):
    y = x
    for i in range(3):
        y = np.sin(y) * x + 0.1 * y[::-1]
    return y


JAC_CASES = [
    ("elementwise", jac_elementwise, _rng_x(20, 4)),
    ("matrix", jac_matrix, _rng_x(21, (3, 2))),
    ("reduce", jac_reduce, _rng_x(22, 3, 0.2, 1.0)),
    ("scalar_out", rosenbrock, _rng_x(23, 4)),
    ("loop", jac_loop, _rng_x(24, 3)),
]

@pytest.mark.parametrize("name, fn, x", JAC_CASES, ids=[c[0] for c in JAC_CASES])
def test_forward_jacobian(name, fn, x):
    J = srcgrad.jacobian(fn, mode="fwd")(x)
    out = np.asarray(fn(x))
    assert J.shape == out.shape + x.shape
    close(J, fd_derivative(fn, x), "jacobian(fwd) vs finite differences", 1e-6, 1e-8)


@pytest.mark.parametrize("name, fn, x", [
    pytest.param(*c) for c in JAC_CASES],
    ids=[c[0] for c in JAC_CASES])
def test_reverse_jacobian_matches_forward(name, fn, x):
    Jr = srcgrad.jacobian(fn, mode="rev")(x)
    Jf = srcgrad.jacobian(fn, mode="fwd")(x)
    assert Jr.shape == np.shape(fn(x)) + x.shape
    close(Jr, Jf, "jacobian rev vs fwd", 1e-12, 1e-12)
    close(Jr, fd_derivative(fn, x), "jacobian(rev) vs finite differences", 1e-6, 1e-8)


def scaled(x, a):
    return np.sin(x) * a


def test_jacobian_with_respect_to_the_second_argument():
    x, a = np.array([0.1, 0.2]), np.array([1.5, -0.5])
    for mode in ("rev", "fwd"):
        J = srcgrad.jacobian(scaled, wrt="a", mode=mode)(x, a)
        close(J, np.diag(np.sin(x)), mode, 1e-15, 0)


def test_forward_jacobian_with_a_python_float_argument():
    x = np.array([0.1, 0.2])
    J = srcgrad.jacobian(scaled, mode="fwd")(x, 0.5)
    close(J, np.diag(0.5 * np.cos(x)), "fwd", 1e-15, 0)


def test_jacobian_mode_is_checked():
    with pytest.raises(ValueError, match="mode"):
        srcgrad.jacobian(scaled, mode="both")


def test_a_pullback_can_be_called_twice():
    x = np.array([0.1, 0.2])
    _, pullback = srcgrad.vjp(jac_loop, x)
    first = pullback(np.array([1.0, 0.0]))
    again = pullback(np.array([1.0, 0.0]))
    close(again, first, "the same cotangent twice", 0, 0)


# ---- custom primitives --------------------------------------------------------------------------

@srcgrad.primitive
def log1pexp(x):
    return np.logaddexp(0.0, x)


@log1pexp.defvjp
def _log1pexp_vjp(g, out, x):
    return g / (1 + np.exp(-x))


@log1pexp.defjvp
def _log1pexp_jvp(tangents, out, x):
    (t,) = tangents
    return t / (1 + np.exp(-x))


@srcgrad.primitive
def log1pexp_nojvp(x):
    return np.logaddexp(0.0, x)


@log1pexp_nojvp.defvjp
def _log1pexp_nojvp_vjp(g, out, x):
    return g / (1 + np.exp(-x))


@srcgrad.primitive
def double_norule(x):
    return 2.0 * x


@srcgrad.primitive
def softplus_from_out(x):
    return np.logaddexp(0.0, x)


@softplus_from_out.defvjp
def _softplus_from_out_vjp(g, out, x):
    return g * (1.0 - np.exp(-out))  # sigmoid(x) == 1 - exp(-softplus(x))


@srcgrad.primitive
def hypot_op(x, y):
    return np.sqrt(x * x + y * y)


@hypot_op.defvjp
def _hypot_op_vjp(g, out, x, y):
    r = np.sqrt(x * x + y * y)
    return g * x / r, g * y / r  # one cotangent per input


@hypot_op.defjvp
def _hypot_op_jvp(tangents, out, x, y):
    tx, ty = tangents  # None where an input has no tangent
    r = np.sqrt(x * x + y * y)
    t = 0.0
    if tx is not None:
        t = t + tx * x / r
    if ty is not None:
        t = t + ty * y / r
    return t


def uses_hypot_op(x, y):
    return np.sum(hypot_op(x, y) * x)


def uses_log1pexp(x, w):
    return np.sum(log1pexp(x * w) * w)


def uses_log1pexp_nojvp(x):
    return np.sum(log1pexp_nojvp(x) * x)


def uses_double_norule(x):
    y = np.sin(x)
    z = double_norule(y)
    return np.sum(z)


def uses_softplus_from_out(x):
    return np.sum(softplus_from_out(x))


EXTREMES = np.array([-40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 40.0])


def _sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))  # accurate in the tails


def _dsigmoid(x):
    return _sigmoid(x) * _sigmoid(-x)


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_custom_primitive_in_compiled_code():
    w = np.ones_like(EXTREMES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no invalid value
        value = uses_log1pexp(EXTREMES, w)
        g = srcgrad.grad(uses_log1pexp, wrt=0)(EXTREMES, w)
    assert np.isfinite(value) and np.all(np.isfinite(g))
    close(value, np.sum(np.logaddexp(0.0, EXTREMES)), "forward", 1e-15, 0)
    close(g, _sigmoid(EXTREMES), "grad == sigmoid", 1e-12, 1e-300)
    close(g, finite_differences(uses_log1pexp, [EXTREMES, w], 0), "vs finite differences",
          1e-6, 1e-9)
    w2 = np.linspace(0.5, 1.5, EXTREMES.size)
    gw = srcgrad.grad(uses_log1pexp, wrt=1)(EXTREMES, w2)
    close(gw, finite_differences(uses_log1pexp, [EXTREMES, w2], 1), "grad w.r.t. w vs fd",
          1e-6, 1e-7)  # (the sum is ~100: its differences carry ~1e-8 of rounding)


def test_custom_primitive_is_called_not_inlined():
    src = srcgrad.grad(uses_log1pexp).source
    assert "log1pexp(" in src
    assert "logaddexp" not in src  # neither the forward's body...
    assert "log1pexp_vjp" not in src  # ...nor a call to the rule: it is staged as ops
    assert "np.exp(" in src


def test_custom_primitive_on_the_tape():
    w = np.linspace(0.5, 1.5, EXTREMES.size)
    (gx, gw) = tape_grads(uses_log1pexp, [EXTREMES, w], [0, 1])
    cx, cw = srcgrad.grad(uses_log1pexp, wrt=(0, 1))(EXTREMES, w)
    close(gx, cx, "tape vs srcgrad, x", 1e-12, 1e-300)
    close(gw, cw, "tape vs srcgrad, w", 1e-12, 1e-300)
    # second derivative on the tape: the rule is made of differentiable numpy calls
    x = rt.tensor(EXTREMES.copy(), requires_grad=True)
    log1pexp(x).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    close(g.data, _sigmoid(EXTREMES), "first derivative", 1e-12, 1e-300)
    x.grad = None
    g.sum().backward()
    close(x.grad.data, _dsigmoid(EXTREMES), "second derivative", 1e-10, 1e-300)


def test_custom_primitive_with_a_jvp_rule_under_forward_mode_and_hessian():
    x = np.array([-40.0, -1.0, 0.0, 2.0, 40.0])
    w = np.linspace(0.5, 1.5, x.size)
    out, tout = srcgrad.jvp(uses_log1pexp, (x, w), (np.ones_like(x), None))
    close(out, uses_log1pexp(x, w), "value", 1e-15, 0)
    close(tout, np.sum(_sigmoid(x * w) * w * w), "tangent", 1e-12, 1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        H = srcgrad.hessian(uses_log1pexp, wrt=0)(x, w)
    close(H, np.diag(_dsigmoid(x * w) * w ** 3), "closed form", 1e-10, 1e-300)
    g = srcgrad.grad(uses_log1pexp, wrt=0)
    close(H, fd_derivative(lambda xx: g(xx, w), x), "vs finite differences of grad",
          1e-6, 1e-9)
    d2 = srcgrad.grad(srcgrad.grad(uses_log1pexp, wrt=0), wrt=0)(0.3, 1.2)
    close(d2, _dsigmoid(0.36) * 1.2 ** 3, "grad of grad", 1e-12, 0)


def test_custom_primitive_with_two_inputs():
    x, y = np.array([1.0, 2.0, -0.5]), np.array([0.5, -1.0, 2.0])
    gx, gy = srcgrad.grad(uses_hypot_op, wrt=(0, 1))(x, y)
    close(gx, finite_differences(uses_hypot_op, [x, y], 0), "x vs fd", 1e-6, 1e-9)
    close(gy, finite_differences(uses_hypot_op, [x, y], 1), "y vs fd", 1e-6, 1e-9)
    tx, ty = tape_grads(uses_hypot_op, [x, y], [0, 1])
    close(gx, tx, "x vs tape", 1e-12, 1e-15)
    close(gy, ty, "y vs tape", 1e-12, 1e-15)
    # a broadcast operand: the cotangent is summed back to its shape where the rule is applied
    gy0 = srcgrad.grad(uses_hypot_op, wrt=1)(x, np.array(0.7))
    assert np.shape(gy0) == ()
    close(gy0, finite_differences(uses_hypot_op, [x, np.array(0.7)], 1), "broadcast y",
          1e-6, 1e-9)
    # the JVP rule sees None for an input without a tangent
    _, t = srcgrad.jvp(uses_hypot_op, (x, y), (None, np.ones(3)))
    close(t, np.sum(gy), "jvp along y", 1e-12, 1e-15)
    H = srcgrad.hessian(uses_hypot_op, wrt=1)(x, y)
    g1 = srcgrad.grad(uses_hypot_op, wrt=1)
    close(H, fd_derivative(lambda yy: g1(x, yy), y), "hessian w.r.t. y vs fd")


def test_custom_primitive_without_a_vjp_rule_names_the_op_and_the_line():
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(uses_double_norule)(np.array([0.1, 0.2]))
    err = info.value
    assert "double_norule" in str(err)
    assert "defvjp" in str(err)
    assert err.lineno == _line_of(uses_double_norule, "z = double_norule(y)")
    assert err.filename == __file__
    # the tape refuses it too
    with pytest.raises(TypeError, match="double_norule"):
        double_norule(rt.tensor(np.array([0.1]), requires_grad=True)).sum().backward()


def test_custom_primitive_without_a_jvp_rule_under_hessian():
    x = np.array([0.1, -0.2])
    close(srcgrad.grad(uses_log1pexp_nojvp)(x), np.logaddexp(0, x) + x * _sigmoid(x),
          "first order works", 1e-12, 1e-12)
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.hessian(uses_log1pexp_nojvp)(x)
    err = info.value
    assert "log1pexp_nojvp" in str(err) and "defjvp" in str(err)
    assert err.lineno == _line_of(uses_log1pexp_nojvp, "return np.sum(log1pexp_nojvp(x)")
    with pytest.raises(srcgrad.SrcgradError, match="log1pexp_nojvp"):
        srcgrad.jvp(uses_log1pexp_nojvp, (x,), (np.ones(2),))


def test_custom_rule_reading_out_in_compiled_code():
    x = np.array([-3.0, 0.0, 2.0])
    close(srcgrad.grad(uses_softplus_from_out)(x), _sigmoid(x), "grad", 1e-12, 1e-12)


def test_custom_rule_reading_out_on_the_tape():
    x = np.array([-3.0, 0.0, 2.0])
    (g,) = tape_grads(uses_softplus_from_out, [x], [0])
    close(g, _sigmoid(x), "tape grad", 1e-12, 1e-12)


RULE_MODULE = '''import numpy as np
import srcgrad


@srcgrad.primitive
def edited_op(x):
    return 2.0 * x


@edited_op.defvjp
def _(g, out, x):
    return g * FACTOR


def loss(x):
    return np.sum(edited_op(x))
'''


def test_editing_a_custom_rule_invalidates_the_disk_cache(tmp_path):
    path = tmp_path / "edited_rule.py"

    def load(factor, name):
        path.write_text(RULE_MODULE.replace("FACTOR", factor))
        linecache.checkcache(str(path))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    wrong = load("3.0", "edited_rule_v1")  # a wrong rule, compiled and cached
    close(srcgrad.grad(wrong.loss)(np.ones(2)), [3.0, 3.0], "the wrong rule is used", 0, 0)
    fixed = load("2.0", "edited_rule_v2")  # the user fixes the rule and runs again
    close(srcgrad.grad(fixed.loss)(np.ones(2)), [2.0, 2.0], "the fixed rule is used", 0, 0)


# ---- stop_gradient ------------------------------------------------------------------------------

def self_times_stopped(x):
    return np.sum(x * srcgrad.stop_gradient(x))


def cube_times_stopped(x):
    return np.sum(x ** 2 * srcgrad.stop_gradient(x))


def test_stop_gradient_in_compiled_code():
    x = np.array([0.5, -1.0, 2.0])
    close(srcgrad.grad(self_times_stopped)(x), x, "d/dx sum(x * sg(x)) == x", 0, 0)
    close(self_times_stopped(x), np.sum(x * x), "the forward is unchanged", 0, 0)
    close(srcgrad.hessian(cube_times_stopped)(x), np.diag(2 * x), "hessian", 1e-15, 0)
    _, t = srcgrad.jvp(self_times_stopped, (x,), (np.ones(3),))
    close(t, np.sum(x), "tangent through sg is zero", 1e-15, 0)


def test_stop_gradient_on_the_tape_is_detach():
    x = np.array([0.5, -1.0, 2.0])
    (g,) = tape_grads(self_times_stopped, [x], [0])
    close(g, x, "tape grad", 0, 0)
    t = rt.tensor(x.copy(), requires_grad=True)
    s = srcgrad.stop_gradient(t)
    d = t.detach()
    assert not s.requires_grad and not d.requires_grad
    assert s.is_leaf and s.grad_fn is None
    np.testing.assert_array_equal(s.data, d.data)


def test_vjp_jvp_and_jacobian_refuse_a_tuple_output():
    """Their cotangent or tangent is one array: a function that returns a tuple is refused
    at its return line (it used to give zero derivatives without a word)."""
    import specialize_user as U

    x = np.linspace(-1.0, 1.0, 4)
    for call in (lambda: srcgrad.vjp(U.two_outputs, x),
                 lambda: srcgrad.jvp(U.two_outputs, (x,), (np.ones(4),)),
                 lambda: srcgrad.jacobian(U.two_outputs)(x)):
        with pytest.raises(TypeError, match=r"returns a tuple is not supported"
                                            r"(.|\n)*specialize_user\.py"):
            call()


def _index_weighted(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i] * i  # the loop index, a Python int, in the product
    return s


def _index_weighted_scalar(k):
    s = 0.0
    for i in range(4):
        s = s + k * k * i
    return s


def test_second_order_of_a_loop_that_multiplies_by_its_index():
    """The adjoint loop's cotangent of `s` is a Python float there (1.0 times the index):
    forward-over-reverse read its `.shape` and stopped with an AttributeError."""
    x = np.array([0.3, -1.2, 0.7])
    expected = np.diag(2.0 * np.arange(3.0))
    np.testing.assert_allclose(srcgrad.hessian(_index_weighted, cache=False)(x), expected,
                               atol=1e-12)
    np.testing.assert_allclose(srcgrad.hvp(_index_weighted, cache=False)(x, np.ones(3)),
                               expected @ np.ones(3), atol=1e-12)
    np.testing.assert_allclose(
        srcgrad.grad(srcgrad.grad(_index_weighted_scalar), cache=False)(0.7), 12.0)
