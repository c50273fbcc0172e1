"""Variants specialized to a call's shapes and dtypes (srcgrad.specialize).

What the variants compute is checked on every program of the test corpus, the primitive
table and the random programs (compiler_helpers.check_specialized: equal to the
shape-polymorphic code). Here: when a variant is made and which calls it runs, what its
guard sends back to the polymorphic code, the bound on variants, the disk cache, and that
the generated source shows every resolved shape.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import specialize
from compiler_helpers import check_golden, finite_differences

import specialize_user as U


def fresh(fn, **kw):
    return srcgrad.grad(fn, cache=False, **kw)


def test_a_variant_is_made_on_the_third_call_with_one_signature():
    g = fresh(U.mlp_loss, wrt=(0, 1, 2, 3))
    args = U.mlp_inputs(8)
    want = g(*args)
    for n in range(2, specialize.HOT_CALLS + 3):
        got = g(*args)
        assert g.variant_count == (1 if n >= specialize.HOT_CALLS else 0)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert g.compile_count == 1
    assert g._call is not g._impl  # the variant runs first


def test_the_variant_source_resolves_shapes_and_casts():
    g = fresh(U.mlp_loss, wrt=(0, 1, 2, 3))
    src = g.specialized_source(*U.mlp_inputs(8))
    body = "\n".join(ln for ln in src.split("the shape-polymorphic code\n", 1)[1].splitlines()
                     if not ln.lstrip().startswith("#"))
    for gone in ("sum_to(", "broadcast_shapes(", "cast_like(", "as_float(", ".shape"):
        assert gone not in body, gone
    assert "W1.shape == (16, 16) and W1.dtype == float64" in src
    check_golden("specialized_mlp_loss", src)


def test_other_shapes_go_to_the_polymorphic_code_and_are_right():
    g = fresh(U.mlp_loss, wrt=(0, 1, 2, 3))
    hot = U.mlp_inputs(8)
    for _ in range(specialize.HOT_CALLS):
        g(*hot)
    assert g.variant_count == 1
    other = U.mlp_inputs(5)
    got = g(*other)
    for i, gi in enumerate(got):
        np.testing.assert_allclose(gi, finite_differences(U.mlp_loss, other, i),
                                   rtol=1e-6, atol=1e-8)
    assert g.variant_count == 1  # one call with new shapes makes no variant yet


def test_another_dtype_or_type_is_not_run_by_the_variant():
    g = fresh(U.scaled_norm)
    x = np.linspace(-1.0, 1.0, 6)
    for _ in range(specialize.HOT_CALLS):
        g(x, 2.0)
    x32 = x.astype(np.float32)
    got = g(x32, 2.0)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, g(x, 2.0), rtol=1e-6)
    # an int where a float was: the guard tests types, the polymorphic code runs
    np.testing.assert_allclose(g(x, 2), g(x, 2.0), rtol=1e-15)
    # a subclass of ndarray is not an ndarray to the guard
    m = np.ma.masked_array(x)
    np.testing.assert_allclose(np.asarray(g(m, 2.0)), g(x, 2.0), rtol=1e-15)
    assert g.variant_count == 1


def test_keyword_arguments_and_defaults():
    g = fresh(U.with_options, wrt="w")
    w, X = np.ones(3), np.arange(6.0).reshape(2, 3)
    want = g(w, X, scale=0.5)
    for _ in range(specialize.HOT_CALLS + 1):
        got = g(w, X=X, scale=0.5)
    assert g.variant_count == 1
    np.testing.assert_allclose(got, want, rtol=1e-15)
    # the default `scale` (a float) and a keyword-only `power` both go through the guard
    np.testing.assert_allclose(g(w, X), 2 * g(w, X, scale=0.5), rtol=1e-14)
    np.testing.assert_allclose(g(w, X, scale=0.5, power=3),
                               finite_differences(lambda w: U.with_options(
                                   w, X, scale=0.5, power=3), [w], 0), rtol=1e-6)


def test_at_most_max_variants_then_the_polymorphic_code():
    g = fresh(U.scaled_norm)
    for n in range(2, 2 + specialize.MAX_VARIANTS + 2):
        x = np.linspace(0.0, 1.0, n)
        for _ in range(specialize.HOT_CALLS):
            got = g(x, 1.5)
        np.testing.assert_allclose(got, finite_differences(U.scaled_norm, [x, 1.5], 0),
                                   rtol=1e-6, atol=1e-9)
    assert g.variant_count == specialize.MAX_VARIANTS


def test_ever_new_shapes_give_up_on_signatures():
    g = fresh(U.scaled_norm)
    for n in range(1, specialize.GIVE_UP + 2):
        g(np.ones(n), 1.0)
    assert g.variant_count == 0
    assert g._call is g._impl  # no signature is looked at any more


def test_structured_arguments_get_a_variant_per_structure():
    g = srcgrad.grad(U.dict_mlp, cache=False)
    params, X = U.dict_params(), np.linspace(-1, 1, 12).reshape(4, 3)
    want = g(params, X)
    for _ in range(specialize.HOT_CALLS):
        got = g(params, X)
    entry = g._last_entry
    assert entry.variant_count == 1
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12)
    assert "W: float64 3x2" in g.specialized_source(params, X).replace("params_", "")


def test_methods_are_specialized():
    model = U.Linear(3)
    X = np.ones((5, 3))
    want = model.loss_grad(model.w, X)
    for _ in range(specialize.HOT_CALLS + 1):
        got = model.loss_grad(model.w, X)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert type(model).loss_grad.__get__(model).variant_count == 1


def test_a_changed_global_drops_the_variants():
    g = fresh(U.uses_global)
    x = np.ones(4)
    for _ in range(specialize.HOT_CALLS + 1):
        g(x)
    assert g.variant_count == 1
    old = U.SCALE
    try:
        U.SCALE = 3.0
        np.testing.assert_allclose(g(x), 2 * 3.0 * x, rtol=1e-15)
        for _ in range(specialize.HOT_CALLS + 1):
            np.testing.assert_allclose(g(x), 2 * 3.0 * x, rtol=1e-15)
    finally:
        U.SCALE = old


def test_value_and_grad_is_specialized_and_specialize_false_is_not():
    vg = srcgrad.value_and_grad(U.scaled_norm, cache=False)
    x = np.linspace(-1, 1, 5)
    for _ in range(specialize.HOT_CALLS):
        v, gx = vg(x, 2.0)
    assert vg.variant_count == 1
    assert v == pytest.approx(U.scaled_norm(x, 2.0), rel=1e-15)
    g = srcgrad.grad(U.scaled_norm, cache=False, specialize=False)
    for _ in range(specialize.HOT_CALLS + 2):
        g(x, 2.0)
    assert g.variant_count == 0 and g._call is g._impl
    with pytest.raises(ValueError, match="specialize=False"):
        g.specialized_source(x, 2.0)


def test_arguments_no_variant_is_made_for_are_refused_by_specialized_source():
    g = fresh(U.list_sum)
    with pytest.raises(TypeError, match="numpy arrays, Python numbers and None"):
        g.specialized_source(np.ones(3), [1.0, 2.0])


def test_the_variant_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    args = (np.ones(4), 2.0)
    g1 = srcgrad.grad(U.scaled_norm)
    g1.specialized_source(*args)
    assert g1.variant_count == 1
    g2 = srcgrad.grad(U.scaled_norm)
    src = g2.specialized_source(*args)
    assert g2.variant_count == 0  # loaded, not compiled
    for _ in range(2):
        np.testing.assert_allclose(g2(*args), g1(*args), rtol=1e-15)
    assert "#   x: float64 4\n#   s: float\n" in src


def test_the_printed_variant_runs_alone_and_refuses_other_shapes():
    g = fresh(U.scaled_norm)
    x = np.linspace(0, 1, 4)
    src = g.specialized_source(x, 2.0)
    ns = {}
    exec(compile(src, "<variant>", "exec"), ns)
    np.testing.assert_allclose(ns["grad_scaled_norm"](x, 2.0), g(x, 2.0), rtol=1e-15)
    with pytest.raises(TypeError, match="specialized to other shapes"):
        ns["grad_scaled_norm"](np.ones(5), 2.0)


def test_a_variant_that_fails_to_build_warns_and_runs_the_general_code(monkeypatch):
    g = fresh(U.scaled_norm)
    x = np.ones(3)
    g(x, 1.0)

    def broken(sig):
        raise AssertionError("boom")

    monkeypatch.setattr(g, "_variant_module", broken)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(specialize.HOT_CALLS):
            got = g(x, 1.0)
    assert any("could not specialize" in str(w.message) for w in seen)
    np.testing.assert_allclose(got, 2 * x, rtol=1e-15)


def test_locals_and_parameters_named_like_the_guards_dtypes():
    x32 = np.linspace(0, 1, 3).astype(np.float32)
    g = fresh(U.local_named_like_a_dtype)
    for _ in range(specialize.HOT_CALLS + 1):
        np.testing.assert_allclose(g(x32), 4 * x32, rtol=1e-6)
    assert g.variant_count == 1
    x = np.linspace(0, 1, 3)
    g = fresh(U.parameter_named_like_a_dtype, wrt=(0, 1))
    for _ in range(specialize.HOT_CALLS + 1):
        dx, dy = g(x, x + 1)
    np.testing.assert_allclose(dx, x + 1, rtol=1e-15)
    assert g.variant_count == 1


def test_byte_order_is_part_of_the_signature(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    x = np.linspace(0, 1, 4)
    swapped = srcgrad.grad(U.sines).specialized_source(x.astype(">f8"))
    native = srcgrad.grad(U.sines).specialized_source(x)
    assert "np.dtype('>f8')" in swapped and "np.dtype('<f8')" in native


def test_specialized_source_beyond_the_bound_says_so():
    g = fresh(U.sines)
    for n in range(1, specialize.MAX_VARIANTS + 1):
        g.specialized_source(np.ones(n))
    with pytest.raises(RuntimeError, match="specialized variants already"):
        g.specialized_source(np.ones(99))


# ---- loops: a carried value that keeps its known shape and dtype ---------------------------

def test_loop_carries_keep_their_known_shapes_in_the_variant():
    """The state of a recurrent loop keeps its shape and dtype from one step to the next:
    in the variant nothing in the loops undoes a broadcast or asks for a shape, and the
    weight gradients accumulate without a cast after the loop."""
    args = U.rnn_inputs()
    g = fresh(U.rnn, wrt=(0, 1, 2))
    want = srcgrad.grad(U.rnn, wrt=(0, 1, 2), specialize=False)(*args)
    src = g.specialized_source(*args)
    code = "\n".join(ln.split("#")[0] for ln in src.split("return general")[1].splitlines())
    for absent in ("sum_to(", "broadcast_shapes(", ".shape", "cast_like("):
        assert absent not in code, absent
    got = g(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[1], finite_differences(U.rnn, args, 1), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("fn,args", [
    (U.growing, (np.linspace(0.2, 1.0, 4), 3)),
    (U.widening, (np.linspace(-1, 1, 5).astype(np.float32), np.array([0.5, -1.2, 2.0]))),
    (U.broadcast_carry, (np.linspace(-1, 1, 3)[:, None], np.linspace(0, 1, 4)[None, :])),
], ids=["growing", "widening", "broadcast"])
def test_loop_carries_that_change_shape_or_dtype(fn, args):
    """What an iteration disproves is not assumed (the loop is lowered again without it;
    the adjoint loop's cotangents likewise): the variant agrees with the polymorphic code
    and with finite differences."""
    g = fresh(fn)
    want = srcgrad.grad(fn, specialize=False)(*args)
    g.specialized_source(*args)
    got = g(*args)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    # (of the same function in float64: differences of float32 values are noise)
    fd = finite_differences(fn, (np.asarray(args[0], np.float64),) + tuple(args[1:]), 0)
    np.testing.assert_allclose(got, fd, rtol=1e-3, atol=1e-4)


def test_a_loop_adds_into_its_sums_in_place():
    """The adjoint of a loop that reads x[t] adds each step's cotangent into the sum it
    carries for x at index t, and each step's weight cotangent into the weight's, in place:
    no array of x's size per step. The function's results are its own arrays."""
    rng = np.random.default_rng(4)
    args = (rng.normal(size=3), rng.normal(size=(7, 2, 3)), np.zeros((2, 3)))
    g = fresh(U.leaky, wrt=(0, 1))
    src = g.specialized_source(*args)
    body = src.split("reversed(range(7)):")[1].split("return")[0]
    # (w's cotangent: the steps' products added up in place, reduced once after the loop)
    assert "scatter_add(" not in body and "dw_steps_2 += " in body
    # each slot of zeros written once (assigned), here over the slot of the array of
    # tanh's derivatives it reads, which nothing reads again: `d = dh_all[t]; d *= dh`
    assert re.search(r"(\w+) = \w+\[t_1\]\n\s+\1 \*= ", body) and "np.zeros((7, 2, 3)" \
        not in src.split("reversed(")[0].split("del h_steps_1")[1]
    want = srcgrad.grad(U.leaky, wrt=(0, 1), specialize=False)(*args)
    kept = [a.copy() for a in args]
    got = g(*args)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, finite_differences(U.leaky, args, k), rtol=1e-5,
                                   atol=1e-7)
    for a, b in zip(args, kept):  # no argument was updated
        np.testing.assert_array_equal(a, b)
    again = g(*args)
    assert not any(np.shares_memory(a, b) for a in got for b in again)


def test_sums_of_a_loop_inside_a_loop_start_afresh():
    """An inner loop runs once per outer step: its carried sums are not updated in place
    in an array made once (each run must start from zeros)."""
    rng = np.random.default_rng(5)
    args = (rng.normal(size=3), rng.normal(size=(4, 2, 3)))
    g = fresh(U.nested_sums, wrt=(0, 1))
    g.specialized_source(*args)
    want = srcgrad.grad(U.nested_sums, wrt=(0, 1), specialize=False)(*args)
    got = g(*args)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, finite_differences(U.nested_sums, args, k), rtol=1e-5,
                                   atol=1e-7)


@pytest.mark.parametrize("fn,args", [
    (U.phase, (np.ones(2), np.linspace(0.5, 1.5, 2))),
    (U.drift, (np.linspace(-0.3, 0.4, 3), np.linspace(0.5, 1.5, 3))),
    (U.heads, (np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(-0.5, 0.5, 60).reshape(3, 4, 5))),
    (U.heads, (np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(-0.5, 0.5, 40).reshape(2, 4, 5))),
], ids=["sum_saved", "sum_saved_array_term", "stacked_w", "stacked_w_other_length"])
def test_loop_rewrites_that_must_not_apply(fn, args):
    """A carried sum that the step also reads (and the reverse pass saves) is not updated
    in place; x[t] @ W with W a stack of matrices is not (x @ W)[t]."""
    for k in range(2):
        g = fresh(fn, wrt=k)
        g.specialized_source(*args)
        want = srcgrad.grad(fn, wrt=k, specialize=False)(*args)
        got = g(*args)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got, finite_differences(fn, args, k), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn,wrt,args,hoisted", [
    (U.rnn, (0, 1, 3), U.rnn_inputs(T=5), ("X", "Wx")),
    (U.partial_rnn, (0, 1, 3), U.rnn_inputs(T=5), None),
    (U.vector_sequence, (0, 1), (np.linspace(-1, 1, 12).reshape(3, 4),
                                 np.linspace(0.5, -0.5, 15).reshape(5, 3)), ("xs", "W")),
], ids=["rnn", "partial", "vectors"])
def test_products_of_each_step_are_one_product_before_the_loop(fn, wrt, args, hoisted):
    """x[t] @ w in a loop over every t is (x @ w)[t], made once before the loop; its
    adjoint is one product after the loop. Not where the loop skips some of x."""
    g = fresh(fn, wrt=wrt)
    src = g.specialized_source(*args)
    code = [ln.split("#")[0].strip() for ln in src.split("return general")[1].splitlines()]
    loop = next(k for k, ln in enumerate(code) if ln.startswith("for "))
    if hoisted is None:
        assert not any("@" in ln or ".dot(" in ln for ln in code[:loop])
    else:  # (a product of matrices is written `a.dot(b)`: half the cost of a small `a @ b`;
        a, b = hoisted  # a stack is multiplied as the matrix of its rows, one product)
        assert any(ln.endswith((f"= {a} @ {b}", f"= {a}.dot({b})", f"= {a}_rows_1.dot({b})"))
                   for ln in code[:loop])
        if len(args[wrt[-1]].shape) >= 3:
            assert any(ln.endswith(f"= np.reshape({a}, (10, 3))") for ln in code[:loop])
    want = srcgrad.grad(fn, wrt=wrt, specialize=False)(*args)
    got = g(*args)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(a, finite_differences(fn, args, wrt[k]), rtol=1e-5,
                                   atol=1e-7)


def _rnn_args(bias_shape):
    Wx, Wh, _, X, h0 = U.rnn_inputs(T=5, batch=2)
    bias = np.random.default_rng(8).normal(0, 0.1, bias_shape)
    return Wx, Wh, bias, X, h0


@pytest.mark.parametrize("fn,bias_shape,hoisted", [
    (U.rnn, (4,), True), (U.rnn_bias_on_the_input, (4,), True),
    (U.rnn_bias_per_row, (2, 4), True), (U.rnn_bias_first, (4,), True),
    (U.rnn_pre_activation_read_twice, (4,), False), (U.rnn_bias_per_step, (1, 2, 4), False),
    (U.rnn_bias_per_step, (5, 2, 4), False),
], ids=["rnn", "on_input", "per_row", "bias_first", "read_twice", "one_step", "per_step"])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_bias_of_each_step_is_added_once_before_the_loop(fn, bias_shape, hoisted, backend):
    """(x @ w)[t] + b, or ((x @ w)[t] + y) + b, with b from outside the loop is
    (x @ w + b)[t] (+ y): b is added to the product made before the loop, and its gradient
    is one sum after the adjoint loop. Not where b would broadcast the step's value to
    another shape, nor where the sum without b is read again. The transpose the adjoint
    reads at each step (Wh.T) is made once, before the loop."""
    if backend == "numba":
        pytest.importorskip("numba")
    args = _rnn_args(bias_shape)
    wrt = (0, 1, 2)
    g = srcgrad.grad(fn, wrt=wrt, cache=False, backend=backend)
    src = g.specialized_source(*args)
    if backend == "numpy":
        code = [ln.split("#")[0].strip() for ln in src.split("return general")[1].splitlines()]
        loop = next(k for k, ln in enumerate(code) if ln.startswith("for "))
        assert any(ln.endswith(("+= b", "+= B", " + B")) for ln in code[:loop]) == hoisted
        back = next(k for k, ln in enumerate(code) if ln.startswith("for ") and k > loop)
        assert not any(ln.endswith("Wh.T") for ln in code[back:])
    want = srcgrad.grad(fn, wrt=wrt, specialize=False, cache=False)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(3):
            got = g(*args)
            for k, (a, b) in enumerate(zip(got, want)):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
                np.testing.assert_allclose(a, finite_differences(fn, args, wrt[k]), rtol=1e-5,
                                           atol=1e-7)


def _sums_products_in_a_loop(src: str) -> bool:
    """Whether a loop of the generated code adds a matrix product it made to a running sum
    (`acc += p`, `acc = acc + p` or `acc = np.add(acc, p, out=p)`, p made by `.dot` or
    `@` in a loop)."""
    import re

    dots, made = set(), set()  # (a name the loop assigns is no running sum: `h += p` of
    for ln in src.splitlines():  # a product h made in the same step is in place)
        if not ln.startswith(" " * 8):
            continue
        s = ln.strip()
        m = re.match(r"(\w+) = .*(\.dot\(| @ )", s)
        if m:
            dots.add(m.group(1))
        m = re.match(r"(\w+) = ", s)
        if m:
            made.add(m.group(1))
        m = re.fullmatch(r"(\w+) \+= (\w+)", s)
        if m and m.group(2) in dots and m.group(1) not in made:
            return True
        m = re.fullmatch(r"(\w+) = (\w+) \+ (\w+)", s) or \
            re.fullmatch(r"(\w+) = np\.add\((\w+), (\w+), out=\w+\)", s)
        if m and m.group(1) in m.group(2, 3) and set(m.group(2, 3)) & dots:
            return True
    return False


@pytest.mark.parametrize("fn,args,batched", [
    (U.rnn, U.rnn_inputs(T=5), True),
    (U.rnn_vectors, U.rnn_inputs(T=5, batch=1)[:3] + (U.rnn_inputs(T=5)[3][:, 0],
                                                      np.zeros(4)), True),
    (U.gram_of_steps, (np.linspace(-0.5, 0.5, 12).reshape(3, 4),
                       np.linspace(-1.0, 1.0, 30).reshape(5, 2, 3)), True),
    (U.rnn_with_break, U.rnn_inputs(T=5), False),
    (U.rnn_every_other_step, U.rnn_inputs(T=5), True),
    (U.sum_read_in_the_step, (np.linspace(-0.5, 0.5, 12).reshape(3, 4),
                              np.linspace(-1.0, 1.0, 30).reshape(5, 2, 3)), False),
], ids=["rnn", "vectors", "gram", "break", "every_other", "read_in_step"])
def test_products_summed_over_steps_are_one_product_after_the_loop(fn, args, batched):
    """acc = acc + p.T @ q (or outer(p, q)) at each step of a loop of known length, p and
    q made by the step: p and q are kept, and the sum is one product after the loop (the
    adjoint of h @ W in a loop over time). Not in a loop with a break (its length is
    not known), nor where the step reads the running sum."""
    wrt = tuple(range(len(args) - 2)) if len(args) == 5 else (0,)
    g = fresh(fn, wrt=wrt)
    src = g.specialized_source(*args)
    body = src.split("return general")[1]  # (the function's name may hold "_steps")
    assert (not _sums_products_in_a_loop(body)) == batched, src
    want = srcgrad.grad(fn, wrt=wrt, specialize=False, cache=False)(*args)
    for _ in range(3):
        got = g(*args)
        got, ref = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for k, (a, b) in enumerate(zip(got, ref)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(a, finite_differences(fn, args, wrt[k]), rtol=1e-5,
                                       atol=1e-7)
    for a in args:  # no argument was updated
        assert np.all(np.isfinite(a))


def test_reductions_and_transposes_of_arrays_are_methods():
    """A variant writes `x.sum(axis=0)` and `X.T` for arrays of known shape (cheaper than
    np.sum's dispatch), and keeps np.sum for a value that may be a Python number."""
    X = np.random.default_rng(4).normal(size=(5, 3))
    g = fresh(U.reductions_of_both, wrt=(0, 1))
    want = fresh(U.reductions_of_both, wrt=(0, 1), specialize=False)(X, 0.7)
    src = g.specialized_source(X, 0.7)
    assert ".sum(axis=0)" in src and ".max()" in src and "X.T" in src, src
    assert "np.sum(s" in src or "np.sum(s_" in src, src
    got = g(X, 0.7)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for i, arg in enumerate((X, 0.7)):
        fd = finite_differences(U.reductions_of_both, (X, 0.7), i)
        np.testing.assert_allclose(got[i], fd, rtol=1e-6, atol=1e-8)


def test_a_rewrite_keeps_what_a_loop_init_dtype_is():
    args = [np.array(0.54784675), np.array(-0.92085314), np.array(-1.8361059)]
    g = fresh(U.empty_loop_then_maximum, wrt=(1,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (a variant that failed to build)
        src = g.specialized_source(*args)
        got = g(*args)
    assert "Specialized" in src
    np.testing.assert_allclose(got, finite_differences(U.empty_loop_then_maximum, args, 1),
                               rtol=1e-6)


def test_a_state_made_inside_the_function_gets_the_loop_rewrites():
    """A loop whose state starts as `np.zeros(shape)` made in the function: the new
    array's dtype (float64, numpy's default) is known, so the adjoint loop carries
    cotangents of known shape and dtype like one whose state is an argument (it fell
    back to the shape-polymorphic adjoint: sum_to and matmul_grad_a at every step)."""
    args = U.rnn_inputs(T=5)[:4]
    g = fresh(U.rnn_state_made_inside, wrt=(0, 1, 2))
    body = g.specialized_source(*args).split("return general")[1]
    assert "sum_to" not in body and "matmul_grad_a" not in body, body
    assert "_steps" in body, body  # the per-step products of the adjoint: one product
    want = srcgrad.grad(U.rnn_state_made_inside, wrt=(0, 1, 2), specialize=False)(*args)
    for _ in range(3):
        for k, (a, b) in enumerate(zip(g(*args), want)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(a, finite_differences(U.rnn_state_made_inside, args, k),
                                       rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn,wrt,once", [
    (U.rnn, (0, 1, 3), True),
    (U.rnn_last_steps, (0, 1, 3), False),
    (U.rnn_read_twice, (0, 1, 3), None),
], ids=["every_step", "negative_indices", "read_twice"])
def test_a_cotangent_scattered_once_per_slot_is_assigned(fn, wrt, once):
    """The adjoint of `x[t]` read in a loop over t = 0, 1, ... writes the step's cotangent
    into slot t of zeros: `dx[t] = g` (a third of the cost of `dx[t] += g`). Not where a
    slot may be written twice (negative indices alias others)."""
    args = U.rnn_inputs(T=5)
    g = fresh(fn, wrt=wrt)
    body = g.specialized_source(*args).split("return general")[1]
    assigned = re.search(r"\]\s=\s", body) is not None
    added = re.search(r"\]\s\+=\s", body) is not None
    if once is not None:
        assert (assigned, added) == (once, not once), body
    want = srcgrad.grad(fn, wrt=wrt, specialize=False)(*args)
    for _ in range(3):
        for k, (a, b) in enumerate(zip(g(*args), want)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(a, finite_differences(fn, args, wrt[k]), rtol=1e-5,
                                       atol=1e-7)


def test_a_bias_of_no_dimension_gets_its_sum_as_numpy_gives_it():
    # like_arg(db, b) is db itself where db is a float64 sum and b a float64 of no
    # dimension: the variant calls no helper, and returns what the general code returns
    def loss(w, b, X, y):
        return np.mean(np.log1p(np.exp(-y * (X @ w + b))))

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(6, 3)), np.sign(rng.normal(size=6))
    for b in (np.array(0.2), 0.2):
        args = (rng.normal(size=3), b, X, y)
        g = fresh(loss, wrt=(0, 1))
        src = g.specialized_source(*args)
        assert "like_arg(" not in src.split("shape-polymorphic code\n", 1)[1], src
        got, want = g(*args), fresh(loss, wrt=(0, 1), specialize=False)(*args)
        assert type(got[1]) is type(want[1]) is np.float64
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        num = finite_differences(loss, [a if i != 1 else np.asarray(a) for i, a in
                                        enumerate(args)], 1)
        np.testing.assert_allclose(got[1], num, rtol=1e-6)


_SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, 1e-310, -5e-324, 1e308, -1e308, np.inf, -np.inf,
                     np.nan, 0.1, 3.0, 2.0 ** 53 + 2, 7.25e-12])


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.true_divide,
                                   np.maximum, np.minimum])
@pytest.mark.parametrize("number", [0.5, -0.125, 1, 3, -7, 0.0, -0.0, 1e-300, 1e300,
                                    2 ** 52 + 1, 5e-324])
def test_a_number_as_a_0d_float64_array_gives_numpys_result_bit_for_bit(ufunc, number):
    # (what a variant relies on when it writes a Python number operand of a float64
    # array's arithmetic as a module-level 0-d array, codegen._F64: same type, dtype,
    # shape and bits, in either order, nan, inf, signed zeros and subnormals included)
    x = np.concatenate([_SPECIAL, np.random.default_rng(1).normal(size=40)]).reshape(5, 11)
    zero_d = np.array(float(number))
    with np.errstate(all="ignore"):
        for want, got in ((ufunc(x, number), ufunc(x, zero_d)),
                          (ufunc(number, x), ufunc(zero_d, x)),
                          (ufunc(x[0], number), ufunc(x[0], zero_d))):
            assert type(got) is type(want) and got.dtype == want.dtype == np.float64
            assert got.shape == want.shape
            assert got.tobytes() == want.tobytes()


def test_numbers_of_a_variants_float64_arithmetic_are_module_level_arrays_same_bits(
        monkeypatch):
    from srcgrad import codegen

    model = U.Huber(delta=0.8)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(12, 4)), rng.normal(size=12)
    w = rng.normal(size=4)
    w32, X32, y32 = w.astype(np.float32), X.astype(np.float32), y.astype(np.float32)

    def run(*args):
        g = fresh(model.loss)
        src = g.specialized_source(*args)
        got = g(*args)
        assert g._call is not g._impl  # (the variant ran)
        return src, got

    src, got = run(w, X, y)
    # (delta is 0.8; the penalty's 2 * 1e-3 folded into 0.002)
    assert re.search(r"^F64_0_8 = np\.array\(0\.8\)$", src, re.M), src
    assert re.search(r"^F64_0_002 = np\.array\(0\.002\)$", src, re.M), src
    assert re.search(r"^    dw_1 = F64_0_002 \* w$", src, re.M), src
    np.testing.assert_allclose(got, finite_differences(model.loss, [w, X, y], 0),
                               rtol=1e-6, atol=1e-8)
    # float32 arrays: a 0-d float64 array would make the result float64, so their numbers
    # stay Python numbers (a cotangent numpy makes float64, np.where(c, 0.0, 1/12) of
    # Python floats, keeps its 0-d array)
    src32, got32 = run(w32, X32, y32)
    assert re.search(r"^    dw_1 = 0\.001 \* w$", src32, re.M), src32
    assert got32.dtype == np.float32
    # the same variants with the numbers written as Python numbers: the same bits
    monkeypatch.setattr(codegen, "_F64_OPS", frozenset())
    plain, want = run(w, X, y)
    assert "F64_" not in plain
    assert got.dtype == want.dtype == np.float64 and got.tobytes() == want.tobytes()
    plain32, want32 = run(w32, X32, y32)
    assert "F64_" not in plain32 and got32.tobytes() == want32.tobytes()


def test_a_python_number_argument_is_not_written_as_an_array():
    g = fresh(U.scaled_norm)
    src = g.specialized_source(np.ones(3), 2.5)
    # (s is a Python float: `s * 2.0` of Python floats stays a Python float's arithmetic)
    got = g(np.ones(3), 2.5)
    np.testing.assert_allclose(got, 2 * 2.5 * np.ones(3))
    assert "np.array(2.5)" not in src


def test_a_variant_planned_twice_keeps_its_numbers_as_arrays():
    # (a local that takes a name the module reads, here the builtin `isinstance` that the
    # inlined assert calls, makes codegen plan the module again: its numbers were marked
    # by the first plan)
    g = fresh(U.shadows_a_builtin)
    x = np.arange(4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(specialize.HOT_CALLS + 1):
            got = g(x, 2.0)
    assert g._call is not g._impl and g.variant_count == 1
    assert "F64_0_5 = np.array(0.5)" in g.specialized_source(x, 2.0)
    np.testing.assert_allclose(got, finite_differences(U.shadows_a_builtin, [x, 2.0], 0),
                               rtol=1e-7)


def _two_layers(W1, W2, X):
    h = np.tanh(X @ W1)
    return np.sum((h @ W2) ** 2)


@pytest.mark.parametrize("rows", [4, 300])
def test_a_large_matrix_product_is_written_with_the_operator_a_small_one_as_dot(rows):
    """numpy's `a.dot(b)` fills its new result with zeros before the product writes it:
    a variant writes a product whose result has DOT_FILLS elements or more `a @ b`, a
    smaller one `a.dot(b)` (cheaper to call); the gradient is the general code's."""
    from srcgrad import codegen

    rng = np.random.default_rng(rows)
    args = (rng.normal(size=(16, 32)), rng.normal(size=(32, 3)), rng.normal(size=(rows, 16)))
    g = srcgrad.grad(_two_layers, wrt=(0, 1))
    body = g.specialized_source(*args).split("return general", 1)[1]
    products = re.findall(r"= (\w+)(\.dot\(| @ )(\w+)\)?$", body, re.M)
    assert len(products) == 5, body  # X @ W1, h @ W2, and three in the gradient
    # the results: X @ W1 and its cotangent rows x 32, h @ W2 rows x 3, the weights'
    # cotangents 16 x 32 and 32 x 3
    large = 2 if rows * 32 >= codegen.DOT_FILLS > rows * 3 else 0
    assert sum(how == " @ " for _, how, _ in products) == large, body
    want = srcgrad.grad(_two_layers, wrt=(0, 1), specialize=False)(*args)
    for _ in range(3):
        for got, ref in zip(g(*args), want):
            np.testing.assert_allclose(got, ref, rtol=1e-12)
