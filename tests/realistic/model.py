"""A model class holding its parameters in `self.params` and its regularisation in a
config, with activation objects; the loss is differentiated with respect to the params."""
import numpy as np


class Tanh:
    def __call__(self, x):
        return np.tanh(x)


class LeakyReLU:
    def __init__(self, alpha=0.01):
        self.alpha = alpha

    def forward(self, x):
        return np.where(x > 0, x, self.alpha * x)


class TwoLayerNet:
    def __init__(self, input_dim, hidden_dim, num_classes, reg=0.0, weight_scale=1e-1,
                 seed=0):
        rng = np.random.default_rng(seed)
        self.params = {}
        self.params["W1"] = weight_scale * rng.standard_normal((input_dim, hidden_dim))
        self.params["b1"] = np.zeros(hidden_dim)
        self.params["W2"] = weight_scale * rng.standard_normal((hidden_dim, num_classes))
        self.params["b2"] = np.zeros(num_classes)
        self.config = {"reg": reg}
        self.act = Tanh()
        self.out_act = LeakyReLU(0.1)

    def scores(self, params, X):
        h = self.act(X @ params["W1"] + params["b1"])
        z = h @ params["W2"] + params["b2"]
        return self.out_act.forward(z)

    def loss_from(self, params, X, y):
        scores = self.scores(params, X)
        scores -= scores.max(axis=1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=1, keepdims=True)
        N = X.shape[0]
        data_loss = -np.log(probs[np.arange(N), y]).mean()
        reg = self.config["reg"]
        reg_loss = 0.0
        for name in ("W1", "W2"):
            reg_loss += 0.5 * reg * np.sum(params[name] ** 2)
        return data_loss + reg_loss

    def loss(self, X, y=None):
        """Scores when y is None (test time), the loss otherwise."""
        if y is None:
            return self.scores(self.params, X)
        return self.loss_from(self.params, X, y)
