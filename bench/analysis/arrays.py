"""The numpy array types bench/analysis is annotated with (numpy.typing): one name each, so every
module says the same thing the same way."""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]      # instants, values, widths: ns
F64 = npt.NDArray[np.float64]    # offsets relative to a reference, rates, statistics
Idx = npt.NDArray[np.intp]       # positions (np.arange, np.argsort, np.flatnonzero)
Mask = npt.NDArray[np.bool_]
