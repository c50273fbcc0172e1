"""Objects whose classes define Python's operators themselves: a training phase compared
with ==, a config asked `"l2" in cfg`, a schedule's truth, a scale multiplied into arrays,
layers picked by min(..., key=...), a dict keyed by phases."""
import dataclasses
import enum
import functools

import numpy as np


class Phase:
    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Phase) and self.name == other.name

    def __hash__(self):
        return hash(self.name)


TRAIN, EVAL = Phase("train"), Phase("eval")


class Level:
    def __init__(self, n):
        self.n = n

    def __lt__(self, other):
        return self.n < other.n


@functools.total_ordering
class Version:
    def __init__(self, major):
        self.major = major

    def __eq__(self, other):
        return self.major == other.major

    def __lt__(self, other):
        return self.major < other.major


class Config:
    def __init__(self, **opts):
        self.opts = dict(opts)

    def __contains__(self, key):
        return key in self.opts

    def __iter__(self):
        return iter(sorted(self.opts))

    def __bool__(self):
        return bool(self.opts)


class Scale:
    def __init__(self, c):
        self.c = c

    def __mul__(self, other):
        return self.c * other

    def __rmul__(self, other):
        return other * self.c

    def __neg__(self):
        return Scale(-self.c)

    def __abs__(self):
        return abs(self.c)

    def __radd__(self, other):
        return other + self.c


class Layer:
    def __init__(self, W, enabled=True):
        self.W = W
        self.enabled = enabled

    @property
    def width(self):
        return self.W.shape[1]

    def __bool__(self):
        return self.enabled

    def __matmul__(self, h):
        return np.tanh(h @ self.W)


@dataclasses.dataclass
class Options:
    decay: float = 0.0
    square: bool = True


DEFAULTS = Options()
LIMIT = Level(2)
V2 = Version(2)
RNG = np.random.default_rng(3)


def fresh_state():
    return {"phase": Phase("train"), "level": Level(1), "cfg": Config(l2=0.1),
            "scale": Scale(2.0), "opts": Options(), "version": Version(2),
            "layers": [Layer(RNG.normal(size=(3, 3)) * 0.5),
                       Layer(RNG.normal(size=(3, 2)) * 0.5)],
            "weights": {TRAIN: 1.0, EVAL: 3.0}, "lenient": PhaseName("train"),
            "key": Key("a"), "acc": Accumulator(1.0)}



def dropout_like(x):
    scale = 0.5 if STATE["phase"] == TRAIN else 1.0
    return np.sum(np.tanh(x) ** 2) * scale


def not_training(x):
    if STATE["phase"] != TRAIN:
        return np.sum(x ** 3)
    return np.sum(x ** 2)


def by_level(x):
    return np.sum(np.sin(x)) if STATE["level"] < LIMIT else np.sum(np.cos(x))


def regularized(x):
    cfg = STATE["cfg"]
    loss = np.sum((x - 1.0) ** 2)
    if "l2" in cfg:
        loss = loss + cfg.opts["l2"] * np.sum(x ** 2)
    return loss


def phase_in_list(x):
    return np.sum(x ** 2) if STATE["phase"] in [EVAL] else np.sum(x)


def no_options(x):
    cfg = STATE["cfg"]
    return np.sum(x ** 2) if not cfg else np.sum(np.exp(x))


def options_and(x):
    cfg = STATE["cfg"]
    return np.sum(x ** 2) * (2.0 if (cfg and STATE["phase"] == TRAIN) else 1.0)


def options_counted(x):
    total = np.sum(x)
    for _key in tuple(STATE["cfg"]):
        total = total + np.sum(x ** 2)
    return total


def scaled(x):
    s = STATE["scale"]
    return np.sum(s * x ** 2) + np.sum((0.5 * s) * x) + abs(s) * np.sum(x)


def summed_scales(x):
    return np.sum(x) * sum([STATE["scale"], STATE["scale"]])


def enabled_layers(x):
    h = x
    for layer in [lay for lay in STATE["layers"] if lay]:
        h = layer @ h
    return np.sum(h ** 2)


def widest(x):
    layer = max(STATE["layers"], key=lambda lay: lay.width)
    return np.sum((x @ layer.W) ** 2)


def weighted(x):
    return STATE["weights"][STATE["phase"]] * np.sum(x ** 2) + \
        STATE["weights"].get(STATE["phase"], 0.0) * np.sum(x)


def phase_position(x):
    k = [EVAL, TRAIN].index(STATE["phase"])
    return np.sum(x ** (k + 2))


def default_options(x):
    if STATE["opts"] == DEFAULTS:
        return np.sum(x ** 2)
    return np.sum(x ** 2) + STATE["opts"].decay * np.sum(x ** 4)


def versioned(x):
    if STATE["version"] >= V2:  # (total_ordering's __ge__, from __lt__)
        return np.sum(np.tanh(x) ** 2)
    return np.sum(x ** 2)


class PhaseName:
    """Equal to anything with its name (Phase is equal to Phases only)."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return getattr(other, "name", None) == self.name

    __hash__ = object.__hash__


PHASES = [PhaseName("train"), TRAIN]


def position_of_train(x):
    i = PHASES.index(TRAIN)  # Python asks PHASES[0] == TRAIN first: PhaseName's, True
    return np.sum(x ** (i + 2.0))


def lenient_in_strict(x):
    p = 2.0 if STATE["lenient"] in [TRAIN] else 3.0  # TRAIN == lenient first: False
    return np.sum(x ** p)


class Key:
    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return self.name == other.name

    def __hash__(self):
        return 1


KEYED = {Key("a"): 1.0, Key("b"): 3.0}
ACTIVE = {Key("a")}


def keyed_by_objects(x):
    return KEYED[STATE["key"]] * np.sum(x ** 2)


def in_a_set_of_objects(x):
    return np.sum(x ** 2) if STATE["key"] in ACTIVE else np.sum(x)


SENTINEL_TRAIN, SENTINEL_EVAL = object(), object()
SENTINEL = {"mode": SENTINEL_TRAIN}


def by_sentinel(x):
    if SENTINEL["mode"] is SENTINEL_TRAIN:
        return np.sum(x ** 2)
    return np.sum(x ** 3)


PAIRS = {(0, 1)}


def in_a_set_of_pairs(x):
    return np.sum(x ** 2) if (1, 2) in PAIRS else np.sum(x)



class Accumulator:
    def __init__(self, scale):
        self.scale = scale

    def __add__(self, other):
        return self.scale + other

    def __iadd__(self, other):  # (what `acc += v` calls first)
        return self.scale + 2 * other


def accumulated(x):
    acc = STATE["acc"]
    acc += 0.5
    return np.sum(x ** 2) * acc


class Feature(enum.Enum):
    DROPOUT = "dropout"
    NOISE = "noise"

    def __bool__(self):  # (reads a global: an enabled set)
        return self.value in ENABLED


ENABLED = ["dropout"]


def feature_on(x):
    if Feature.DROPOUT:
        return np.sum(x ** 2)
    return np.sum(x ** 3)


STATE = fresh_state()
