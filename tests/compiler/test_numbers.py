"""Variants whose arguments hold one number each compute on Python floats first
(srcgrad.scalars): they return what the numpy code returns (types, shapes, dtypes,
values), and hand every number outside Python's domain (a division by zero, a log of a
negative, an overflow, nan) to the numpy code, which answers with numpy's values and
warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcgrad
from compiler_helpers import assert_close, finite_differences
from programs import ProgramWriter

import numbers_user as U

# the ways one number comes in
KINDS = {
    "float": float,
    "0-d": np.array,
    "(1,)": lambda v: np.array([v]),
    "(1, 1)": lambda v: np.array([[v]]),
}

CASES = [  # (function, wrt, argument values, whether its variant has the form)
    (U.projectile_range, (0, 1), (12.0, 0.6), True),
    (U.rosenbrock2, (0, 1), (0.7, 1.3), True),
    (U.gaussian_nll, (0, 1), (0.3, -0.4, 1.1), True),
    (U.logistic_loss, (0, 1), (0.8, -0.2, 1.5, -1.0), True),
    (U.polar_energy, (0, 1), (1.4, 0.3), True),
    (U.power_law, (0, 1), (-0.6, 1.7), True),
    (U.hyperbolic, 0, (0.45,), True),
    (U.reshaped, (0, 1), (0.9, -1.2), True),
    (U.branchy, 0, (0.8,), False),  # (an `if`: the numpy code)
]


def _general(fn, wrt, kind=srcgrad.grad):
    return kind(fn, wrt=wrt, cache=False, specialize=False)


def _check_same(got, want, note):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), note
    for k, (a, b) in enumerate(zip(got, want)):
        if isinstance(a, tuple):
            _check_same(a, b, note)
            continue
        assert type(a) is type(b), f"{note}, result {k}: {type(a).__name__}, not " \
            f"{type(b).__name__}"
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype, note
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15, err_msg=note)


def _arguments(values, kind):
    make = KINDS[kind]
    return tuple(make(v) for v in values)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fn,wrt,values,has_form", CASES,
                         ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("transform", [srcgrad.grad, srcgrad.value_and_grad],
                         ids=["grad", "value_and_grad"])
def test_the_form_returns_what_the_numpy_code_returns(fn, wrt, values, has_form, kind,
                                                      transform):
    args = _arguments(values, kind)
    g = transform(fn, wrt=wrt, cache=False)
    note = f"{fn.__name__} on {kind} arguments"
    if np.ndim(fn(*args)):  # (a gradient of an array of one element: refused alike)
        for f in (g, _general(fn, wrt, transform)):
            with pytest.raises(TypeError, match="scalar-output"):
                f(*args)
        return
    src = g.specialized_source(*args)
    assert ("math.isfinite(" in src) == has_form, src
    for _ in range(2):
        _check_same(g(*args), _general(fn, wrt, transform)(*args), note)
    grads = g(*args)[1] if transform is srcgrad.value_and_grad else g(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    indices = wrt if isinstance(wrt, tuple) else (wrt,)
    for i, gi in zip(indices, grads):  # (and right: against finite differences)
        num = finite_differences(fn, [np.asarray(a, dtype=float) for a in args], i)
        assert_close(np.asarray(gi), num, 1e-6, 1e-8, f"{note}, argument {i}")


def test_mixed_kinds_and_an_argument_that_is_none_or_not_differentiated():
    args = (np.array([0.8]), np.array(-0.2), 1.5, np.array([[-1.0]]))
    g = srcgrad.value_and_grad(U.logistic_loss, wrt=(0, 1), cache=False)
    assert "math.isfinite(" in g.specialized_source(*args)
    _check_same(g(*args), _general(U.logistic_loss, (0, 1), srcgrad.value_and_grad)(*args),
                "mixed")


def test_a_method_of_an_instance():
    s = U.Spring(3.0, 0.25)
    g = srcgrad.grad(s.energy, wrt=(0, 1), cache=False)
    for kind in ("float", "0-d"):  # (of an array, its value is an array: refused)
        args = _arguments((0.4, -1.1), kind)
        assert "math.isfinite(" in g.specialized_source(*args)
        got = g(*args)
        want = (np.float64(3.0 * 0.4 + 0.25 * -1.1), np.float64(-1.1 + 0.25 * 0.4))
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a).ravel(), b, rtol=1e-13)
        _check_same(got, _general(s.energy, (0, 1))(*args), kind)


# numbers outside Python's domain: (function, argument) -> the numpy code's answer
EDGES = [
    (U.log_of, 0.0),          # 1 / 0: ZeroDivisionError in Python, inf in numpy
    (U.log_of, -1.0),         # value_and_grad: math.log(-1) raises, numpy gives nan
    (U.sqrt_of, -4.0),        # math.sqrt raises, numpy gives nan
    (U.sqrt_of, 0.0),
    (U.exp_of, 1000.0),       # math.exp overflows (raises), numpy gives inf
    (U.arcsin_of, 2.0),       # math.asin raises, numpy gives nan
    (U.fractional_power, -2.0),  # x ** 0.5 of a negative: math.pow raises
    (U.log_of, float("nan")),  # nan: no exception, a result that is not finite
    (U.log_of, float("inf")),
    (U.exp_of, -1000.0),      # underflow to 0: finite, Python and numpy agree
]


@pytest.mark.parametrize("kind", ["float", "(1,)"])
@pytest.mark.parametrize("fn,x", EDGES, ids=[f"{f.__name__}({x})" for f, x in EDGES])
@pytest.mark.parametrize("transform", [srcgrad.grad, srcgrad.value_and_grad],
                         ids=["grad", "value_and_grad"])
def test_numbers_outside_pythons_domain_get_numpys_answer_and_warnings(fn, x, kind,
                                                                       transform):
    args = _arguments((x,), kind)
    g = transform(fn, cache=False)
    assert "math.isfinite(" in g.specialized_source(*args)
    general = _general(fn, 0, transform)
    want, want_w = _recorded(general, args)
    got, got_w = _recorded(g, args)
    note = f"{fn.__name__}({x!r}) on {kind}"
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    for a, b in zip(_flat(got_t), _flat(want_t)):
        assert type(a) is type(b), note
        np.testing.assert_array_equal(a, b, err_msg=note)  # (nan == nan here)
    assert _said(got_w) == _said(want_w), note


def _recorded(f, args):
    """f(*args) and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return f(*args), caught


def _said(caught) -> list:
    # (numpy says "in scalar divide" of numpy scalars, "in divide" of arrays: the variant
    # and the general code may hold one number as either)
    return sorted(str(w.message).replace("scalar ", "") for w in caught)


def _flat(x):
    return [y for v in x for y in _flat(v)] if isinstance(x, tuple) else [x]


def test_an_overflow_python_does_not_raise_is_numpys_too():
    # 1e200 * 1e200 is inf in Python without an exception: the result is not finite, so
    # the numpy code answers, with its overflow warning
    g = srcgrad.grad(U.product, wrt=(0, 1), cache=False)
    args = (np.array([1e200]), np.array([1e200]))
    assert "math.isfinite(" in g.specialized_source(*args)
    got = g(*args)
    np.testing.assert_array_equal(got[0], args[1])  # d(xy)/dx = y: finite, no overflow
    big = (np.array([1e300]), np.array([1e300]))
    g2 = srcgrad.value_and_grad(U.product, wrt=(0, 1), cache=False)
    g2.specialized_source(*big)
    with pytest.warns(RuntimeWarning, match="overflow"):
        value, _ = g2(*big)
    assert value == np.inf and type(value) is np.float64


def test_other_arguments_are_not_given_the_form():
    g = srcgrad.grad(U.product, wrt=(0, 1), cache=False)
    for args in [(np.array([1.0, 2.0]), np.array([3.0, 4.0])),           # two numbers
                 (np.array([1.0], np.float32), np.array([3.0], np.float32)),  # float32
                 (np.array([1.0]), 3)]:                                     # an int
        assert "math.isfinite(" not in g.specialized_source(*args), args


def test_the_numba_backend_writes_the_form_in_its_python_entry():
    pytest.importorskip("numba")
    for args in [(np.array([0.3]), np.array([-0.4]), np.array([1.1])),
                 (np.array(0.3), -0.4, np.array(1.1))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = srcgrad.grad(U.gaussian_nll, wrt=(0, 1), cache=False, backend="numba")
            src = g.specialized_source(*args)
            got = g(*args)
        assert "math.isfinite(" in src and "@njit" in src
        _check_same(got, _general(U.gaussian_nll, (0, 1))(*args), "numba")
        with warnings.catch_warnings():  # (out of the domain: the compiled code answers)
            warnings.simplefilter("ignore")
            edge = (args[0], np.float64(-1000.0).item() if isinstance(args[1], float)
                    else np.full_like(args[1], -1000.0), args[2])
            _check_same(g(*edge), _general(U.gaussian_nll, (0, 1))(*edge), "numba, edge")


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("number_programs")


@st.composite
def number_programs(draw):
    return ProgramWriter(draw, name="f", one_element=True).write()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_programs_of_numbers(program_dir, data):
    """Random programs on arguments of one element (Python floats, 0-d arrays, arrays of
    dims 1): the variant (with its form where it has one) equals the numpy code and the
    finite differences."""
    program = data.draw(number_programs())
    module = program.load(program_dir)
    fn = getattr(module, program.name)
    general = srcgrad.grad(fn, wrt=program.wrt, cache=False, specialize=False)
    try:
        want = general(*program.args)
    except srcgrad.SrcgradError:
        return  # (a located refusal: the random-program properties check those)
    g = srcgrad.grad(fn, wrt=program.wrt, cache=False)
    g.specialized_source(*program.args)
    got = g(*program.args)
    _check_same(got, want, program.source)
    for i, gi in zip(program.wrt_indices(), got):
        num = finite_differences(fn, [np.asarray(a, dtype=float) if not isinstance(a, int)
                                      else a for a in program.args], i)
        assert_close(np.asarray(gi), num, 1e-4, 1e-6 * (1 + np.abs(num).max()),
                     program.source)


# ---- what a review found: signs of zero, dtypes of constants, inf or nan on the way --------

def heading(vx, omega, r):
    vy = np.sum(-omega * r)
    return np.arctan2(vy, np.sum(vx))


def clipped_angle(x, y):
    return np.sum(np.arctan2(y, np.maximum(x, 0.0)) + np.arctan2(np.sign(x), y - 2.0))


def relu_loss(x, y):
    h = np.maximum(x, 0)
    return np.sum((h - y) ** 2), h


def gated(x, y):
    return np.sum(np.where(x > 0, x, 0) * y), np.where(x > 0, 1, 0.5)


def decaying(x):
    return np.sum(1.0 / (1.0 + x * x))


def bump(x):
    return np.sum(np.exp(-x * x))


@pytest.mark.parametrize("kind", ["float", "(1,)"])
def test_signs_of_zero_are_numpys(kind):
    for fn, values, wrt in [(heading, (-2.0, 0.0, 1.0), (0, 1)),
                            (clipped_angle, (-0.0, 0.0), (0, 1))]:
        args = _arguments(values, kind)
        g = srcgrad.value_and_grad(fn, wrt=wrt, cache=False)
        assert "math.isfinite(" in g.specialized_source(*args)
        got = g(*args)
        want = _general(fn, wrt, srcgrad.value_and_grad)(*args)
        assert float(got[0]) == float(fn(*args)) == float(want[0])  # (pi, not -pi)
        for a, b in zip(_flat(got), _flat(want)):
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def test_an_integer_constant_a_result_takes_is_a_float():
    for fn in (relu_loss, gated):
        for kind in ("(1,)", "(1, 1)"):
            args = _arguments((-1.5, 0.5), kind)
            g = srcgrad.value_and_grad(fn, wrt=0, has_aux=True, cache=False)
            assert "math.isfinite(" in g.specialized_source(*args)
            (value, aux), grad = g(*args)
            (value2, aux2), grad2 = _general(fn, 0, lambda f, **k: srcgrad.value_and_grad(
                f, has_aux=True, **k))(*args)
            assert aux.dtype == aux2.dtype == np.float64, (fn.__name__, aux)
            np.testing.assert_array_equal(aux, aux2)
            aux += 0.5  # (an array of floats: updatable with floats)


@pytest.mark.parametrize("kind", ["float", "(1,)"])
def test_an_overflow_on_the_way_warns_or_raises_as_numpy_does(kind):
    for fn, x, state in [(decaying, 1e200, {"over": "raise"}),
                         (bump, 30.0, {"under": "raise"})]:
        args = _arguments((x,), kind)
        g = srcgrad.grad(fn, cache=False)
        assert "math.isfinite(" in g.specialized_source(*args)
        general = _general(fn, 0)
        got, got_w = _recorded(g, args)
        want, want_w = _recorded(general, args)
        np.testing.assert_array_equal(got, want)
        assert _said(got_w) == _said(want_w), fn.__name__
        with np.errstate(**state):
            with pytest.raises(FloatingPointError):
                general(*args)
            with pytest.raises(FloatingPointError):
                g(*args)
