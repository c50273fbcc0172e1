"""chain: 30 elementwise operations (sin, cos, exp, log, tanh, sqrt, mul, add) on a vector.

Values stay bounded for any real x: every exp sees an argument in [-2.5, 2.5].
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


def grad_hand(x):
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
