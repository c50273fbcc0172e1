"""chain: 30 elementwise operations (sin, cos, exp, log, tanh, sqrt, mul, add) on a vector.

Values stay bounded for any real x: every exp sees an argument in [-2.5, 2.5].

Hand-written gradients (all timed; the suite takes the fastest in each run as the reference):
- `grad_hand`: forward and backward written together in as few numpy calls as the
  chain allows: updates in place, cotangents kept negated where that saves a negation
  (the fastest for small n; writing every step with `out=` into preallocated rows was
  slower there, as keyword arguments cost more than small allocations),
- "blocked": forward and backward fused over blocks of BLOCK elements, every operation
  written with `out=` into one of 19 scratch rows of one block (freed rows reused for the
  cotangents), so the working set stays in cache and nothing the size of x is allocated
  but the result; each sine and cosine of one argument come from a single vectorised tan
  of the half angle (numpy's float64 sin and cos are scalar loops, about four times the
  cost): the fastest for large n,
- "blocked, numpy's sin and cos": "blocked" with numpy's own sin and cos (the same
  operations as the loss, as a compiler that keeps numpy's values must compute them),
- "simple": the forward pass keeping the values the backward pass reads, then the
  backward pass, a new array for each operation.
"""
import numpy as np

WRT = ("x",)
SIZES = {"tiny": {"n": 9}, "small": {"n": 100}, "large": {"n": 1_000_000}}


def describe(n):
    return f"n={n:.0e}" if n >= 1000 else f"n={n}"


def make_inputs(rng, n):
    return (rng.uniform(-2.0, 2.0, n),)


def loss(x):
    a = np.sin(x)
    b = np.cos(x)
    c = a * b
    d = np.exp(c)
    e = np.tanh(d)
    f = e + a
    g = f * x
    h = np.sin(g)
    i = h * h
    j = i + 1.0
    k = np.log(j)
    l = k * b
    m = np.tanh(l)
    n = m + c
    o = 0.5 * n
    p = np.exp(o)
    q = p - d
    r = np.sin(q)
    s = r * e
    t = s + h
    u = np.tanh(t)
    v = u * u
    w = v + 2.0
    y = np.sqrt(w)
    z = y * a
    zc = np.cos(z)
    zd = zc - b
    ze = np.exp(zd)
    zf = ze * u
    return np.sum(zf)


BLOCK = 16384


def _sincos_half_angle(theta, s, c):
    """s = sin(theta), c = cos(theta) from t = tan(theta / 2): s = 2t / (1 + t^2),
    c = 2 / (1 + t^2) - 1 (one vectorised tan and five cheap operations, a quarter of the
    time of numpy's scalar-loop sin and cos; accurate to a few ulp of 1, which is all a
    value of magnitude at most 1 needs here). theta may be s or c."""
    np.multiply(theta, 0.5, out=s)
    np.tan(s, out=s)
    np.multiply(s, s, out=c)
    c += 1.0
    np.divide(2.0, c, out=c)
    s *= c
    c -= 1.0


def _sincos_exact(theta, s, c):
    """s = sin(theta), c = cos(theta) with numpy's own sin and cos (theta may be s or c)."""
    if theta is s:
        np.cos(theta, out=c)
        np.sin(theta, out=s)
    else:
        np.sin(theta, out=s)
        np.cos(theta, out=c)


def _fused(x, gx, w, sincos=_sincos_half_angle):
    """gx = the gradient at x, forward and backward in place in the 19 rows of w
    (each of x's length), one numpy call per elementwise operation; each sine is
    computed with its cosine."""
    exp, tanh, log, sqrt = np.exp, np.tanh, np.log, np.sqrt
    mul, add, sub = np.multiply, np.add, np.subtract
    a, b, c, d, e, f, g, h, j, k, m, p, q, r, u, y, z, s, v = w
    sincos(x, a, b)                                 # a = sin x, b = cos x
    mul(a, b, out=c); exp(c, out=d); tanh(d, out=e)
    add(e, a, out=f); mul(f, x, out=g)
    sincos(g, h, g)                                 # h = sin g, g = cos g
    mul(h, h, out=j); j += 1.0
    log(j, out=k); mul(k, b, out=m); tanh(m, out=m); add(m, c, out=p); p *= 0.5
    exp(p, out=p); sub(p, d, out=q)
    sincos(q, r, q)                                 # r = sin q, q = cos q
    mul(r, e, out=u); u += h
    tanh(u, out=u); mul(u, u, out=y); y += 2.0; sqrt(y, out=y); mul(y, a, out=z)
    sincos(z, z, c)                                 # z = sin z, c = cos z
    # backward; s holds -gb, v holds -ga
    c -= b; exp(c, out=c)                           # c = ze
    mul(c, u, out=s)                                # s = ze*u = -gb
    z *= s                                          # z = -gz
    mul(z, y, out=v)                                # v = -ga
    z *= a; z *= u; z /= y; sub(c, z, out=c)        # c = gu
    mul(u, u, out=u); sub(1.0, u, out=u); c *= u    # c = gt
    r *= c                                          # r = ge
    q *= c; q *= e                                  # q = gq = -gd
    p *= q; p *= 0.5                                # p = gc
    mul(m, m, out=m); sub(1.0, m, out=m); m *= p    # m = gl
    k *= m; s -= k                                  # gb += gl*k
    m *= b; m /= j; m *= h; m *= 2.0; m += c        # m = gh
    g *= m                                          # g = gg
    mul(g, x, out=h); v -= h; r += h                # ga, ge += gg*x
    mul(g, f, out=gx)                               # gx = gg*f
    mul(e, e, out=e); sub(1.0, e, out=e); e *= r; e -= q   # e = gd
    e *= d; p += e                                  # p = gc
    mul(p, b, out=d); v -= d                        # ga += gc*b
    mul(p, a, out=d); s -= d                        # gb += gc*a
    s *= a; v *= b; s -= v; gx += s                 # gx += ga*b - gb*a


def grad_hand(x):
    sin, cos, exp, tanh, log, sqrt = np.sin, np.cos, np.exp, np.tanh, np.log, np.sqrt
    a = sin(x); b = cos(x); c = a * b; d = exp(c); e = tanh(d); f = e + a; g = f * x
    h = sin(g); j = h * h; j += 1.0; k = log(j); m = tanh(k * b)
    p = m + c; p *= 0.5; p = exp(p); q = p - d; r = sin(q)
    u = r * e; u += h; u = tanh(u); w = u * u; y = w + 2.0; y = sqrt(y); z = y * a
    ze = cos(z); ze -= b; ze = exp(ze)
    # backward; nb = -gb, na = -ga, and nt, ne, nq, nc the negated gt, ge, gq, gc
    nb = ze * u
    nz = sin(z); nz *= nb                           # -gz
    na = nz * y
    nz *= a; nz *= u; nz /= y
    nt = ze - nz; w -= 1.0; nt *= w                 # gt = (ze - nz) (1 - u^2)
    ne = nt * r
    nq = cos(q); nq *= nt; nq *= e
    nc = nq * p; nc *= 0.5
    gl = m * m; gl -= 1.0; gl *= nc                 # gc (1 - m^2)
    nb -= gl * k
    gh = gl * b; gh /= j; gh *= h; gh *= 2.0; gh -= nt
    gg = cos(g); gg *= gh
    t = gg * x; na -= t; ne -= t
    gx = gg * f
    gd = e * e; gd -= 1.0; gd *= ne; gd += nq       # ge (1 - e^2) - gq
    gd *= d; nc -= gd
    na += nc * b; nb += nc * a
    nb *= a; na *= b; nb -= na; gx += nb            # gx += ga b - gb a
    return (gx,)


def grad_hand_blocked(x, sincos=_sincos_half_angle):
    n = x.shape[0]
    gx = np.empty_like(x)
    bs = max(1, min(BLOCK, n))
    w = np.empty_like(x, shape=(19, bs))
    for s in range(0, n - bs + 1, bs):
        _fused(x[s:s + bs], gx[s:s + bs], w, sincos)
    r = n % bs
    if r:
        _fused(x[n - r:], gx[n - r:], w[:, :r], sincos)
    return (gx,)


def grad_hand_blocked_exact(x):
    return grad_hand_blocked(x, _sincos_exact)


def grad_hand_simple(x):
    # forward, keeping what the backward pass reads
    a = np.sin(x)
    b = np.cos(x)
    c = a * b
    d = np.exp(c)
    e = np.tanh(d)
    f = e + a
    g = f * x
    h = np.sin(g)
    j = h * h + 1.0
    k = np.log(j)
    m = np.tanh(k * b)
    p = np.exp(0.5 * (m + c))
    q = p - d
    r = np.sin(q)
    u = np.tanh(r * e + h)
    y = np.sqrt(u * u + 2.0)
    z = y * a
    ze = np.exp(np.cos(z) - b)
    # backward: cotangents of the named values, d(sum zf) = 1
    zu = ze * u
    gz = -zu * np.sin(z)
    gu = ze + gz * a * u / y                       # zf = ze*u, and u -> y -> z -> ze
    ga = gz * y
    gb = -zu
    gt = gu * (1.0 - u * u)
    ge = gt * r
    gq = gt * e * np.cos(q)
    gd = -gq
    gc = 0.5 * gq * p
    gl = gc * (1.0 - m * m)                        # gm = gn = gc (o = 0.5 n folded in gc)
    gb += gl * k
    gh = gt + gl * b / j * 2.0 * h
    gg = gh * np.cos(g)
    ga += gg * x
    ge += gg * x
    gx = gg * f
    gd += ge * (1.0 - e * e)
    gc += gd * d
    ga += gc * b
    gb += gc * a
    gx += ga * b - gb * a
    return (gx,)


HAND_VARIANTS = {"blocked": grad_hand_blocked,
                 "blocked, numpy's sin and cos": grad_hand_blocked_exact,
                 "simple": grad_hand_simple}


def make_torch_loss(torch):
    def loss_torch(x):
        a = torch.sin(x)
        b = torch.cos(x)
        c = a * b
        d = torch.exp(c)
        e = torch.tanh(d)
        f = e + a
        g = f * x
        h = torch.sin(g)
        i = h * h
        j = i + 1.0
        k = torch.log(j)
        l = k * b
        m = torch.tanh(l)
        n = m + c
        o = 0.5 * n
        p = torch.exp(o)
        q = p - d
        r = torch.sin(q)
        s = r * e
        t = s + h
        u = torch.tanh(t)
        v = u * u
        w = v + 2.0
        y = torch.sqrt(w)
        z = y * a
        zc = torch.cos(z)
        zd = zc - b
        ze = torch.exp(zd)
        zf = ze * u
        return torch.sum(zf)
    return loss_torch
