"""Property tests: random numpy programs (tests/programs.py), written to a
module file, differentiated by srcgrad and checked against the tape engine and float64
central finite differences.

`test_random_program` and `test_random_long_program` draw the base language, which srcgrad
must compile. `test_feature_programs` adds one to three of the generator's features
(programs.FEATURES: lists grown in run-time loops, run-time slices, integer intermediates,
float modulo, and/or, aliasing, generated-code names, module arrays); there srcgrad may
also refuse a program with a located error (a SrcgradError, not an InternalError, that
names the program's file and line), and each refusal is counted per feature tag (a table
printed at the end of the session, and hypothesis events), so that a feature that is always
refused shows. A wrong gradient, a crash (any other exception) or an InternalError fails.
`test_module_globals_mutated_between_calls` changes and rebinds module arrays between two
calls of one compiled gradient; `test_long_straight_line_program` compiles 100-200
statements under a generous guard and bounds the compiler's work by counts, not times.
"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import itertools
import os
import signal
import warnings

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import srcgrad
import srcgrad.optimize as optimize_module
from compiler_helpers import assert_close, check_specialized, finite_differences, tape_grads
from programs import FEATURES, KNOWN_BUGS, known_bugs_from_env, program_source, programs, \
    record_outcome
from srcgrad.errors import InternalError, SrcgradError


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("programs"))


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def on_copies(fn):
    """`fn` called on copies of its array arguments: a program may update an argument in
    place (feature "alias"), and every evaluation must see the same inputs."""
    def call(*args):
        return fn(*_copies(args))
    return call


def allowed(tag) -> bool:
    """Whether a sub-pattern that hits a known bug (programs.KNOWN_BUGS) is tested."""
    return tag not in KNOWN_BUGS or known_bugs_from_env()


class Refused(Exception):
    """srcgrad refused the program with a located error (accepted where allowed)."""


def gradient(program, fn, g, args, path=None, refusals=False):
    """`g(*args)`; a located SrcgradError is a refusal: counted per feature tag and raised
    as Refused where `refusals` allows it. Anything else propagates (a crash)."""
    note = f"\n{program.source}\nwrt={program.wrt}"
    try:
        return g(*_copies(args))
    except SrcgradError as err:
        if isinstance(err, InternalError) or not refusals:
            raise
        path = path or fn.__code__.co_filename
        lines = program.source.count("\n")
        located = err.filename == path and isinstance(err.lineno, int) and \
            1 <= err.lineno <= lines and os.path.basename(path) in str(err) and \
            f"line {err.lineno}" in str(err)
        assert located, f"a refusal that does not name the program's line: {err!r}{note}"
        tags = program.tags_at(err.lineno)
        if tags:
            record_outcome(program, "refused", tags, str(err))
        else:
            assert program.features_used, f"the base language was refused: {err}{note}"
            record_outcome(program, "refused_elsewhere", None, str(err))
        raise Refused(str(err)) from err


def check_against_oracles(program, fn, got, what=""):
    """`got` (srcgrad's gradients) == finite differences (loose) and == tape (tight).

    A program that updates arrays in place (feature "alias") may be refused by the tape
    (as PyTorch refuses in-place updates of values the backward pass needs, or an `out=`
    array that is not a Tensor), or run differently on it (a 0-d Tensor is mutable where
    numpy's float64 is not): there the tape is skipped where it fails or where it disagrees
    with finite differences while srcgrad agrees, and finite differences decide."""
    args = program.args
    indices = program.wrt_indices()
    note = f"\n{program.source}\nwrt={program.wrt}{what}"
    pure = on_copies(fn)
    value = float(np.asarray(pure(*args)))
    assert np.isfinite(value), f"a program whose value is not finite (a generator bug){note}"
    scale = 1.0 + abs(value)
    if len(program.wrt) == 1:  # a 1-tuple wrt still returns a tuple
        assert isinstance(got, tuple) and len(got) == 1, note
    aliasing = any(t.startswith("alias:") for t in program.features_used)
    nums = []
    for i, gi in zip(indices, got):
        assert np.shape(gi) == np.shape(args[i]), note
        num = finite_differences(pure, args, i)
        gscale = 1.0 + float(np.max(np.abs(num), initial=0.0))
        assert_close(gi, num, 1e-4, 1e-6 * gscale * scale,
                     f"srcgrad vs finite differences, argument {i}{note}")
        nums.append((num, gscale))
    try:
        expected = tape_grads(fn, _copies(args), indices)
    except (RuntimeError, TypeError, ValueError) as err:
        if not aliasing:
            raise
        record_outcome(program, "tape refused", {"alias:tape"})
        event(f"tape refused an in-place update: {type(err).__name__}")
        return
    for i, gi, ti, (num, gscale) in zip(indices, got, expected, nums):
        if aliasing and not np.allclose(ti, num, 1e-4, 1e-6 * gscale * scale):
            record_outcome(program, "tape differs", {"alias:tape"})
            event("the tape runs an aliasing program differently from numpy")
            continue
        assert_close(gi, ti, 1e-6, 1e-9 * scale, f"srcgrad vs tape, argument {i}{note}")


def check_program(program, directory, refusals=False):
    """srcgrad == tape (tight) and == finite differences (loose) for one program; returns
    the compiled gradient, or None for an accepted refusal (`refusals`)."""
    module = program.load(directory)
    fn = getattr(module, program.name)
    record_outcome(program, "generated")
    g = srcgrad.grad(fn, wrt=program.wrt, cache=False)
    try:
        got = gradient(program, fn, g, program.args, refusals=refusals)
    except Refused:
        return None
    check_against_oracles(program, fn, got)
    check_specialized(g, fn, _copies(program.args), got)
    check_vjp(program, fn, got)
    record_outcome(program, "checked")
    return g


def check_vjp(program, fn, got):
    """vjp's pullback (a second function, which pops what the forward function pushed),
    called twice, gives grad's gradients."""
    wrt = program.wrt if len(program.wrt) > 1 else program.wrt[0]
    _, pullback = srcgrad.vjp(fn, *_copies(program.args), wrt=wrt)
    for _ in range(2):
        back = pullback(1.0)
        back = back if isinstance(back, tuple) else (back,)
        for k, (a, b) in enumerate(zip(back, got, strict=True)):
            assert_close(a, b, 1e-9, 1e-12 * (1.0 + float(np.max(np.abs(b), initial=0.0))),
                         f"vjp's pullback vs grad, result {k}\n{program.source}")


# the number of programs follows the hypothesis profile (tests/conftest.py): 300 by
# default, more with --hypothesis-profile=deep
N = settings.default.max_examples


@settings(max_examples=N)
@given(programs())
def test_random_program(program_dir, program):
    check_program(program, program_dir)


@settings(max_examples=max(10, N // 6))
@given(programs(max_statements=12, max_params=4))
def test_random_long_program(program_dir, program):
    check_program(program, program_dir)


# ---- generator features --------------------------------------------------------------------

@st.composite
def feature_programs(draw, required=(), **kw):
    """A program with one to three features (few, so that a refused feature leaves the
    others of most programs checked), `required` among them."""
    features = draw(st.lists(st.sampled_from(FEATURES), min_size=1 - len(required) // 3,
                             max_size=3 - len(required), unique=True), label="features")
    return draw(programs(features=set(features) | set(required), **kw))


@settings(max_examples=max(30, N))
@given(feature_programs())
def test_feature_programs(program_dir, program):
    check_program(program, program_dir, refusals=True)


def load_fresh(program, directory, counter=itertools.count()):
    """(function, its module namespace, file): the source written to a file of its own and
    run in a fresh namespace, so that changing its module arrays touches no other example
    (Program.load shares one module between equal sources)."""
    path = os.path.join(directory, f"fresh_{os.getpid()}_{next(counter)}.py")
    with open(path, "w") as f:
        f.write(program.source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a module object of its own, never in sys.modules
    return getattr(module, program.name), vars(module), path


@settings(max_examples=max(15, N // 3))
@given(feature_programs(required=("globals",)), st.data())
def test_module_globals_mutated_between_calls(program_dir, program, data):
    """One compiled gradient, called again after a module array is changed in place or
    rebound: it must read the array at the call (as a fresh compile and finite differences
    of the changed program do)."""
    fn, namespace, path = load_fresh(program, program_dir)
    record_outcome(program, "generated")
    g = srcgrad.grad(fn, wrt=program.wrt, cache=data.draw(st.booleans(), label="disk cache"))
    try:
        got = gradient(program, fn, g, program.args, path, refusals=True)
    except Refused:
        return
    check_against_oracles(program, fn, got)
    record_outcome(program, "checked")
    arrays = sorted(program.constants)
    assume(arrays)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="new values"))
    floated = False  # a global rebound as a Python float: refusals are accepted from then
    for round_ in range(2):
        name = data.draw(st.sampled_from(arrays), label="changed array")
        hows = ["in place", "rebound", "rebound as a strided view"]
        if np.ndim(namespace[name]) == 0 and allowed("globals:rebound_to_float"):
            hows.append("rebound as a Python float")
        how = data.draw(st.sampled_from(hows), label="how")
        new = rng.uniform(-1.0, 1.0, np.shape(namespace[name]))
        if how == "in place" and isinstance(namespace[name], np.ndarray):
            namespace[name][...] = new
        elif how == "rebound as a strided view":
            namespace[name] = np.stack([new, new], axis=-1)[..., 0]
        elif how == "rebound as a Python float":
            namespace[name] = float(new)
        else:
            namespace[name] = new
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the mean of an empty mask
                value = np.asarray(on_copies(fn)(*program.args), dtype=float)
        except Exception as err:  # e.g. `min(G0, 0.3).sum()`: min now returns the float
            event(f"the changed program fails: {type(err).__name__}")
            return
        if not np.all(np.isfinite(value)) or float(np.abs(value)) > 1e6:
            event("the changed program overflows")
            return
        what = f"\nafter {name} was {how} (round {round_ + 1})"
        try:  # compiled again where a guarded value changed: the new value may make a
            # branch the call does not take invalid (`G0[None]` of a float), a located error
            floated = floated or how == "rebound as a Python float"
            got = gradient(program, fn, g, program.args, path, refusals=floated)
        except Refused:
            continue
        check_against_oracles(program, fn, got, what)
        fresh = srcgrad.grad(fn, wrt=program.wrt, cache=False)
        try:
            fresh = gradient(program, fn, fresh, program.args, path, refusals=True)
        except Refused:
            continue
        for a, b in zip(got, fresh):
            assert_close(a, b, 1e-9, 1e-12, f"the compiled gradient vs a fresh compile{what}"
                                             f"\n{program.source}")
    record_outcome(program, "changed globals checked")


# ---- long programs -------------------------------------------------------------------------

COMPILE_GUARD_S = 300  # a compile that takes longer is taken as one that does not finish
#: bounds on the compiler's work per statement of the user's program (counts, not times):
#: rewrites the optimizer tries, and lines of generated source (in 150 programs of 100-200
#: statements, at most 21 rewrites and 7 lines a statement)
MAX_REWRITES_PER_STATEMENT = 100
MAX_LINES_PER_STATEMENT = 30


@contextlib.contextmanager
def guard(seconds, what):
    """Fail (rather than hang) when the block runs longer than `seconds`."""
    if not hasattr(signal, "setitimer"):
        yield
        return
    fired = []

    def alarm(signum, frame):
        fired.append(True)
        raise TimeoutError(f"{what} did not finish in {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except BaseException:
        if fired:  # a TimeoutError the compiler may have wrapped in its own error
            pytest.fail(f"{what} did not finish in {seconds} s")
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


#: features that long programs may carry (those that need no loop of their own)
LONG_FEATURES = ("ints", "mod", "slices", "globals", "names")


@st.composite
def long_programs(draw):
    features = draw(st.lists(st.sampled_from(LONG_FEATURES), max_size=2, unique=True),
                    label="features")
    return draw(programs(min_statements=100, max_statements=200, straight_line=True,
                         features=features))


@settings(max_examples=max(5, N // 20))
@given(long_programs())
def test_long_straight_line_program(program_dir, monkeypatch_module, program):
    """100-200 statements: the gradient is right, and the compiler's work (rewrites tried,
    lines generated) stays within a bound linear in the program's length."""
    assert program.statements >= 100
    counts = {"rewrites": 0}
    simplify = optimize_module._simplify

    def counting(e, ctx):
        counts["rewrites"] += 1
        return simplify(e, ctx)

    module = program.load(program_dir)
    fn = getattr(module, program.name)
    record_outcome(program, "generated")
    g = srcgrad.grad(fn, wrt=program.wrt, cache=False)
    monkeypatch_module.setattr(optimize_module, "_simplify", counting)
    try:
        with guard(COMPILE_GUARD_S, "compiling a long program"):
            source = g.source
    except SrcgradError:
        source = None  # a refusal: `gradient` below checks and counts it
    finally:
        monkeypatch_module.setattr(optimize_module, "_simplify", simplify)
    try:
        got = gradient(program, fn, g, program.args, refusals=bool(program.features_used))
    except Refused:
        return
    n = program.statements
    lines = source.count("\n")
    event(f"rewrites per statement: {counts['rewrites'] // n // 5 * 5}+")
    assert counts["rewrites"] <= MAX_REWRITES_PER_STATEMENT * n, (counts, n)
    assert lines <= MAX_LINES_PER_STATEMENT * n, (lines, n)
    check_against_oracles(program, fn, got)
    record_outcome(program, "checked")


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@settings(max_examples=20)
@given(st.data())
def test_program_source_entry_point(data):
    """`program_source(draw)` is the generator's reusable entry point (a draw in, source
    text out), for properties that build their own programs around it."""
    text = program_source(data.draw, name="g")
    tree = ast.parse(text)
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef) and fn.name == "g"
    assert isinstance(fn.body[-1], ast.Return)
