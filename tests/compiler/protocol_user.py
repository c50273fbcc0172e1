"""Objects that answer Python's protocols with methods of their own: a model that is
iterated for its layers, a bag with a length, a number and a truth value."""
import numpy as np


class Dense:
    def __init__(self, W):
        self.W = W

    def __call__(self, h):
        return np.tanh(h @ self.W)


class Sequential:
    def __init__(self, *layers):
        self.layers = list(layers)

    def __iter__(self):
        return iter(self.layers)

    def __len__(self):
        return len(self.layers)

    def add(self, layer):
        self.layers.append(layer)


class Bag:
    def __init__(self):
        self.items = [1.0]

    def __len__(self):
        return len(self.items)

    def __float__(self):
        return float(sum(self.items))


RNG = np.random.default_rng(0)
MODEL = Sequential(Dense(RNG.normal(size=(3, 3)) * 0.5))
BAG = Bag()


def network(x):
    h = x
    for layer in MODEL:
        h = layer(h)
    return np.sum(h ** 2)


def depth_scaled(x):
    return np.sum(x ** 2) * len(MODEL)


def bag_number(x):
    return np.sum(x) * float(BAG)


def bag_truth(x):
    if BAG:
        return np.sum(x) * 2.0
    return np.sum(x)


def bag_choice(x):
    return np.sum(x) * (3.0 if len(BAG) > 0 else 1.0)
