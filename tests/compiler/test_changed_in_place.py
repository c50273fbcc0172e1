"""An array changed in place by a statement that runs as written (`buf.fill(0.0)`,
`z.sort()`, `np.copyto(z, v)`, `rng.shuffle(z)`, a write into what an unknown function
returned) while a later read, or a derivative rule, still needs its earlier value: numpy
reads the changed memory there, so srcgrad refuses at the statement rather than return a
stale gradient (srcgrad.verbatim.check_changes). What needs no earlier value compiles and
is checked against finite differences."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcgrad
from srcgrad.errors import SrcgradError, UnsupportedSyntaxError
from compiler_helpers import check_value_and_grad, finite_differences
from stencil_programs import load

X = np.array([0.3, -1.2, 0.7, 2.0])


def check(fn, x=X):
    check_value_and_grad(fn, x)


def refused(fn, *words):
    with pytest.raises(UnsupportedSyntaxError) as info:
        srcgrad.grad(fn)(X.copy())
    msg = str(info.value)
    assert all(w in msg for w in words), msg
    assert info.value.lineno is not None  # at the user's statement
    return msg


# ---- programs as people write them ---------------------------------------------------------

def reused_buffer(x):
    work = np.ones(4) * 1.5
    w = work * x          # the derivative of w reads work's values
    work.fill(3.0)        # ... which the buffer's reuse overwrites
    return np.sum(w) + np.sum(work * x)


def sorted_in_a_loop(x):
    s = 0.0
    for i in range(2):
        y = np.linspace(1.0, 0.1, 4) * (i + 1)
        s = s + np.sum(y * x)   # saved for the gradient at every step
        y.sort()
    return s


def copied_into(x):
    z = np.ones(4)
    w = z * x
    np.copyto(z, 2.0)
    return np.sum(w * z)


def shuffled(x):
    rng = np.random.default_rng(0)
    z = np.arange(4.0)
    w = z * x
    rng.shuffle(z)
    return np.sum(w * z)


def written_through_an_unknown_view(x):
    b = operator.getitem(x, slice(None))  # runs as written: a view of x
    b[0] = 5.0
    return np.sum(x * x)


def written_through_a_view_method(x):
    z = np.ones(4) * 2.0
    w = z * x
    b = operator.getitem(z, slice(1, None))
    b[0] = 0.5            # changes z, whose earlier values the gradient of w reads
    return np.sum(w)


def written_through_a_view_op(x):
    z = x * 2.0
    b = np.ascontiguousarray(z)  # z itself when contiguous, else a copy
    b[1] = 0.0
    return np.sum(z * x)


def buffer_reused_at_every_step(x):
    buf = np.zeros(4)
    s = 0.0
    for i in range(3):
        buf.fill(0.5 * i)     # the same array at every step: the gradient saves the
        s = s + np.sum(np.sin(buf * x))  # values of each step, numpy would overwrite them
    return s


def filled_view(x):
    z = np.ones(4) * 2.0
    w = np.sum(z * x)
    y = z[1:]
    y.fill(3.0)     # changes z, whose earlier values the gradient of w reads
    return w


@pytest.mark.parametrize("fn, words", [
    (reused_buffer, ["work.fill(3.0)", "`work` had before", "gradient"]),
    (sorted_in_a_loop, ["y.sort()", "which the gradient saved"]),
    (copied_into, ["np.copyto(z, 2.0)", "`z` had before"]),
    (shuffled, ["rng.shuffle(z)", "`z` had before"]),
    (written_through_an_unknown_view, ["b[0] = 5.0", "`x`, which may share its memory"]),
    (written_through_a_view_method, ["b[0] = 0.5", "`z`, which may share its memory"]),
    (written_through_a_view_op, ["b[1] = ...", "`b` may share its memory"]),
    (filled_view, ["y.fill(3.0)", "`z`, which may share its memory"]),
    (buffer_reused_at_every_step, ["buf.fill(0.5 * i)", "which the gradient saved"]),
])
def test_a_change_a_later_read_would_miss_is_refused(fn, words):
    refused(fn, *words, "copy()")


def other_name(x):
    z = np.ones(4) * 1.5
    y = z                 # the same array under two names: both see the change
    z.fill(3.0)
    return np.sum(y * x)


def buffer_filled_before_use(x):
    buf = np.zeros(4)
    s = 0.0
    for i in range(3):
        buf.fill(0.5 * i)  # the gradient needs only the sum of what is filled in
        s = s + np.sum(buf) * x[i] ** 2
    return s


def conj_is_the_array(x):
    z = x * 1.0
    b = z.conj()          # a real array's conj() is the array itself
    b[0] = 5.0
    return np.sum(z * z)


def shuffled_index(x):
    rng = np.random.default_rng(3)
    perm = np.arange(4)
    rng.shuffle(perm)     # changes perm, read only after
    return np.sum(x[perm] * np.arange(4.0))


@pytest.mark.parametrize("fn", [other_name, buffer_filled_before_use, conj_is_the_array,
                                shuffled_index])
def test_a_change_no_later_read_misses_compiles(fn):
    check(fn)


# ---- random programs: either the gradient is right or the statement is refused -------------

MAKE = ["np.ones(4) * 1.5", "np.arange(4.0) + 0.5", "x * 0.5 + 1.0", "np.linspace(0.1, 0.9, 4)"]
ALIAS = ["y = z", "y = z[1:]", "y = z[::-1]", "y = np.ascontiguousarray(z)", "y = z.conj()",
         "y = z.copy()", "y = z.reshape(2, 2)", "y = z.view()", "y = np.asarray(z)"]
BEFORE = ["w = x * z", "w = x * np.sum(y)", "w = np.sin(x) * np.max(z)", "w = x * 2.0",
          "w = x * np.sum(y * y)"]
CHANGE = ["y.fill(2.0)", "y.sort()", "np.copyto(y, 3.0)", "y[0] = 7.0", "y *= 0.5",
          "y[...] = y ** 2", "np.put(y, [0], 9.0)", "rng.shuffle(y)", "y += x[0]"]
AFTER = ["w", "w * z", "w * np.sum(y)", "w + x * z[0]", "w * np.sum(z) + np.sum(y)"]


@st.composite
def changed_programs(draw):
    lines = ["import numpy as np", "", "", "def changed(x):",
             "    rng = np.random.default_rng(5)",
             f"    z = {draw(st.sampled_from(MAKE))}",
             f"    {draw(st.sampled_from(ALIAS))}",
             f"    {draw(st.sampled_from(BEFORE))}",
             f"    {draw(st.sampled_from(CHANGE))}",
             f"    return np.sum({draw(st.sampled_from(AFTER))})"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("changed")


@settings(max_examples=max(40, settings.default.max_examples // 6))
@given(changed_programs())
def test_random_changes_in_place_are_right_or_refused(program_dir, source):
    fn = load(source, program_dir, "changed")
    try:
        value, got = srcgrad.value_and_grad(fn)(X.copy())
    except SrcgradError:
        return  # refused at the user's line: never a wrong gradient
    try:
        np.testing.assert_allclose(value, fn(X.copy()), rtol=1e-12)
        np.testing.assert_allclose(got, finite_differences(fn, [X.copy()], 0), rtol=1e-6,
                                   atol=1e-7)
    except AssertionError:
        print(source)
        raise


# -- what a statement run as written binds may hold the array it read ----------------------

def _coef(z, a):
    return np.sum(z * a)


def _kept_in_a_dict(x):
    a = np.ones(4)
    d = dict(k=a)  # (run as written: d holds a itself)
    a += 1.0
    return _coef(x, d["k"])


def _bound_to_it(x):
    a = np.ones(4)
    w = dict(k=a)["k"]  # (run as written: w is a itself)
    a[1] = 7.0
    return _coef(x, w)


@pytest.mark.parametrize("fn", [_kept_in_a_dict, _bound_to_it])
def test_an_update_of_an_array_a_statement_run_as_written_kept_is_refused(fn):
    """numpy's update reaches the dict that holds the array (or the name bound to it);
    srcgrad's rebinding of the name did not, and the gradient read the value before it
    (without a word)."""
    with pytest.raises(SrcgradError, match="statement that runs as written, which may hold|"
                       "`w` may be a view of `a`"):
        srcgrad.grad(fn)(X.copy())


def _shape_and_length_only(x):
    h = np.tanh(x)
    noise = np.random.default_rng(0).normal(size=h.shape)  # (reads h's shape, not h)
    n = len(h)
    top = float(h.max())
    h += 1e-3 * noise + top / n
    return np.sum(h * h)


def test_a_statement_that_reads_only_an_array_s_shape_keeps_nothing():
    check(_shape_and_length_only)
