import numpy as np
class Net:
    def __init__(self): self.w = np.array([1.0, 2.0, 3.0])
    def __call__(self, x): return np.sum(self.w * x * x * 5.0)
net = Net()
def loss(x): return net(x)
