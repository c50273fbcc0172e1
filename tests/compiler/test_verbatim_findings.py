"""Findings on statements that run as written (srcgrad.verbatim). Each test asserts the
correct behaviour; gradients are checked against finite differences."""
import numpy as np
import pytest

import srcgrad
from compiler_helpers import finite_differences

X = np.array([0.3, -0.7, 1.1])


class Counted:
    def __init__(self):
        self.nfev = 0

    def loss(self, x):
        self.nfev += 1
        return np.sum(np.sin(x) ** 2)


# hessian runs one Hessian-vector product per element of x, and jacobian(mode="fwd") one
# JVP: a statement that runs as written would run x.size times per call, each column from
# another run (with a random draw: a Hessian that matches no draw). Refused at that line.
def test_hessian_and_forward_jacobian_refuse_statements_run_as_written():
    m = Counted()
    for make in (lambda: srcgrad.hessian(m.loss),
                 lambda: srcgrad.jacobian(lambda x: np.sin(x) * m.loss(x), mode="fwd")):
        with pytest.raises(srcgrad.SrcgradError, match="once per element of x") as info:
            make()(X)
        assert info.value.lineno == Counted.loss.__code__.co_firstlineno + 1
    assert m.nfev == 0
    # what needs one run per call still works
    np.testing.assert_allclose(srcgrad.hvp(m.loss)(X, np.ones(3)), 2 * np.cos(2 * X),
                               rtol=1e-6)
    assert m.nfev == 1


def test_hessian_of_a_function_with_a_random_draw_is_refused():
    global RNG
    RNG = np.random.default_rng(0)

    def f(x):
        w = RNG.normal(size=3)
        return np.sum(w * x ** 2) + x[0] * x[1] * w[2]

    with pytest.raises(srcgrad.SrcgradError, match="once per element of x"):
        srcgrad.hessian(f)(X)


RNG = None  # set by the test that reads it


# an item of *args that is a Python float, used with an array: the generated code reads
# `.shape` of the float and crashes with AttributeError (the existing test only multiplies
# two scalars). scipy-style `fun(x, *args)` objectives do this.
def test_a_float_from_varargs_times_an_array():
    def fun(x, *args):
        s = args[0]
        return np.sum(x * s)

    np.testing.assert_allclose(srcgrad.grad(fun)(X, 2.0), 2.0 * np.ones(3))


# the same crash for an item of a list built by a statement that runs as written
def test_an_item_of_a_list_of_random_floats_times_an_array():
    def fun(x, seed):
        r = np.random.default_rng(seed)
        ws = [r.normal() for _ in range(3)]
        return np.sum(x * ws[0] + x ** 2 * ws[2])

    got = srcgrad.grad(fun)(X, 0)
    np.testing.assert_allclose(got, finite_differences(fun, [X, 0], 0), rtol=1e-6)


def test_an_item_of_tolist_times_an_array():
    def fun(x, seed):
        ws = np.random.default_rng(seed).normal(size=3).tolist()
        return np.sum(x * ws[1])

    got = srcgrad.grad(fun)(X, 0)
    np.testing.assert_allclose(got, finite_differences(fun, [X, 0], 0), rtol=1e-6)


# a name a `try` binds on only some paths: the generated code ends with `del ..., y2`
# and raises UnboundLocalError when the except path ran (y2 never bound, never used).
def test_a_name_bound_on_some_paths_of_a_try():
    def fun(x, k):
        y = x * 2
        try:
            y2 = int(k)
            ok = True
        except ValueError:
            ok = False
        if ok:
            y = y * y2
        return np.sum(y)

    g = srcgrad.grad(fun)
    np.testing.assert_allclose(g(X, "3"), 6 * np.ones(3))
    np.testing.assert_allclose(g(X, "z"), 2 * np.ones(3))


# a call srcgrad cannot lower in a later `and` operand of an `if` test: Python may skip
# it, so it cannot be made before the statement; refused at the `if` with what to write.
def test_a_random_draw_in_a_later_and_operand_of_an_if_is_refused():
    def fun(x, seed, flag):
        r = np.random.default_rng(seed)
        if flag and r.random() < 2:
            y = x * 2
        else:
            y = x * 3
        return np.sum(y)

    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="statement of its own") as info:
        srcgrad.grad(fun)(X, 0, True)
    assert info.value.lineno == fun.__code__.co_firstlineno + 2


# a chained call `np.random.default_rng(seed).normal(...)` inside an expression: the inner
# call is hoisted, the outer one is then refused as depending on `x`, and the message
# names an internal temporary (`default_rng.0.<id>.normal`).
def test_a_chained_random_call_inside_an_expression():
    def fun(x, seed):
        y = x * np.random.default_rng(seed).normal(size=3)
        return np.sum(y)

    np.testing.assert_allclose(srcgrad.grad(fun)(X, 0),
                               np.random.default_rng(0).normal(size=3))


# **kwargs: `kw["scale"]` is refused as "indexing an array with the string 'scale'".
def test_an_item_of_kwargs():
    def fun(x, **kw):
        s = kw["scale"]
        return np.sum(x ** 2) * s

    np.testing.assert_allclose(srcgrad.grad(fun)(X, scale=2.0), 4 * X)


# a generator expression over a run-time range is refused ("sum() of a list built in a
# run-time loop"), though it touches no differentiated value.
def test_a_generator_expression_over_a_run_time_range():
    def fun(x, n):
        s = sum(i * i for i in range(n))
        return s * np.sum(x ** 2)

    g = srcgrad.grad(fun)
    np.testing.assert_allclose(g(X, 4), 14 * 2 * X)
    np.testing.assert_allclose(g(X, 2), 1 * 2 * X)


# the gradient of a function that takes a gradient of a method with a counter: refused,
# claiming a statement changes `m.loss` (it changes `m.nfev`), and the error's location is
# a line of srcgrad/api.py instead of the user's code.
def test_nested_grad_of_a_method_with_a_counter_is_located_in_user_code():
    m = Counted()

    def outer(x):
        return np.sum(srcgrad.grad(m.loss)(x))

    try:
        srcgrad.grad(outer)(X)
    except srcgrad.SrcgradError as e:
        assert "srcgrad/api.py" not in str(e), str(e)
        assert "changes `m.loss`" not in str(e), str(e)


# -- a Python function of the user's called inside a statement that runs as written may
# change what the function read when srcgrad compiled it (found by an adversarial hunt:
# each returned the previous call's gradient, without a word) ---------------------------

class Trainer:
    def __init__(self):
        self.step = 0
        self.W = np.array([1.0, -2.0, 0.5])

    def next_seed(self):
        self.step += 1
        return self.step

    def refresh(self):
        self.W = self.W * 2.0
        return "refreshed"

    def seeded(self, x):
        rng = np.random.default_rng(self.next_seed())  # runs as written
        noise = 0.0 * rng.normal(size=x.shape)
        return np.sum((x + noise) ** 2) * self.step  # (self.step: read when compiled)

    def logged(self, x):
        print(self.refresh())  # runs as written, and rebinds self.W
        return np.sum(self.W * x)


LR = 1.0


def _decay():
    global LR
    LR *= 0.5
    return LR


def _decayed(x):
    print(_decay())
    return np.sum(x ** 2) * LR


class _State:
    pass


_S1, _S2 = _State(), _State()
_S1.t = _S2.t = 1.0


def _dict_update(x):
    _S1.__dict__.update(t=_S1.t + 1.0)
    return np.sum(x ** 2) * _S1.t


def _dunder_setattr(x):
    _S2.__setattr__("t", _S2.t + 1.0)
    return np.sum(x ** 2) * _S2.t


@pytest.mark.parametrize("make", [lambda: Trainer().seeded, lambda: Trainer().logged,
                                  lambda: _decayed, lambda: _dict_update,
                                  lambda: _dunder_setattr])
def test_a_change_made_by_a_call_in_a_statement_run_as_written_is_refused(make):
    fn = make()
    with pytest.raises(srcgrad.SrcgradError, match="statement that runs as written changes") \
            as info:
        srcgrad.value_and_grad(fn, cache=False)(X.copy())
    assert "test_verbatim_findings.py" in str(info.value)


class Logger:
    def __init__(self):
        self.lines = []

    def log(self, text):
        self.lines.append(text)


LOG = Logger()


def _logs_and_reads_arrays(x):
    try:  # (runs as written) changes LOG, which the gradient never reads
        LOG.log("called")
    except ValueError:
        pass
    return np.sum(np.tanh(x) ** 2)


def test_a_method_that_changes_only_its_own_object_still_runs():
    vg = srcgrad.value_and_grad(_logs_and_reads_arrays, cache=False)
    before = len(LOG.lines)
    value, g = vg(X.copy())
    assert len(LOG.lines) == before + 1
    np.testing.assert_allclose(value, _logs_and_reads_arrays(X))
    np.testing.assert_allclose(g, finite_differences(_logs_and_reads_arrays, (X,), 0),
                               rtol=1e-6, atol=1e-9)


class _Child:
    def __init__(self, k):
        self.k = k

    def f(self, x):
        return np.sin(x) * self.k


def _method_of_an_object_made_inside(x):
    c = _Child(2.0)
    return np.sum(c.f(x))


def test_a_method_of_an_object_made_in_the_function_says_why_and_what_to_do():
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(_method_of_an_object_made_inside, cache=False)(X.copy())
    msg = str(info.value)
    assert "a _Child object the function makes" in msg and "outside the function" in msg
    assert "test_verbatim_findings.py" in msg
