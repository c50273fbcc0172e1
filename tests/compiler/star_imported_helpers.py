"""Names a user's module takes with `from star_imported_helpers import *`."""
import math

import numpy as np

__all__ = ["np", "math"]
