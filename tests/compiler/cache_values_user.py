"""Values a gradient compiles in whole (slices, enum members, dtypes), read from the
module, from a closure and from a dict, as configuration code holds them."""
import enum

import numpy as np


class Mode(enum.Enum):
    SQUARE = 1
    CUBE = 2


def make_loss(mode):
    def loss(x):
        if mode is Mode.SQUARE:
            return np.sum(x ** 2)
        return np.sum(x ** 3)
    return loss


WIN = slice(0, 2)
CFG = {"win": np.s_[1:], "dtype": np.dtype("float64")}


def window_loss(x):
    return np.sum(x[WIN] ** 2)


def configured_loss(x):
    return np.sum(x[CFG["win"]].astype(CFG["dtype"]) ** 3)


ACT = {"act": np.tanh, "reduce": np.sum}


def activation_loss(x):
    return ACT["reduce"](ACT["act"](x) * x)


class Params:
    """Attributes kept in a dict, as some config classes do (a KeyError for other names)."""

    def __init__(self, **values):
        self.__dict__["values"] = dict(values)

    def __getattr__(self, name):
        return self.values[name]


PARAMS = Params(scale=2.0)


def params_loss(x):
    return np.sum(PARAMS.scale * x ** 2)
