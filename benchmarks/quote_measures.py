"""What a measurement of ``benchmarks/quote_registry.py`` is (:class:`Code`, :class:`Command`,
:class:`Table`, :class:`Records`, each :class:`Quote`'s record) and the Python run before a
timed statement: the data and objects each quoted time is measured on (text, run by
``benchmarks/quoted_times.py`` in a fresh interpreter whose working folder is the
repository root)."""

from __future__ import annotations

from dataclasses import dataclass

#: How a subprocess is started: ``{python}`` is this interpreter, ``{tmp}`` a fresh
#: temporary folder (every output goes there, never into the repository).
PY = "{python}"
TMP = "{tmp}"


@dataclass(frozen=True)
class Code:
    """``stmt`` timed in a fresh interpreter (the repository root its working folder),
    after ``setup``; ``repeats`` timings in one process, or each in its own (``fresh``)."""

    stmt: str
    setup: str = ""
    repeats: int = 3
    fresh: bool = False


@dataclass(frozen=True)
class Command:
    """A subprocess, timed whole (wall, and CPU of it and its children), or, with ``parse``
    = (file under ``{tmp}``, a regex whose group is a number, seconds per unit of it), the
    time it wrote there."""

    argv: tuple[str, ...]
    repeats: int = 1
    env: tuple[tuple[str, str], ...] = ()
    parse: tuple[str, str, float] | None = None


@dataclass(frozen=True)
class Table:
    """A benchmark script's committed measurement: the ``value`` of the CSV row whose
    columns equal ``row``."""

    script: str
    csv: str
    row: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Records:
    """A time computed from a study's committed records (``benchmarks/study_times.py``):
    ``study_times.seconds(key)``, a study's script or one of its parts."""

    key: str


@dataclass(frozen=True)
class Quote:
    """One quoted time (see the module note). ``clock``: which number the quote means:
    "wall", "cpu", "parsed" (the time a command wrote) or "records" (computed from the
    committed records). ``long``: skipped by ``--skip-long`` (a minute or more)."""

    key: str
    what: str
    places: tuple[tuple[str, str], ...]
    quoted: float | None
    measure: Code | Command | Table | Records | None = None
    clock: str = "wall"
    long: bool = False
    reason: str = ""


#: The README's "Ten lines" block, read when the measurement starts.
TEN_LINES = (
    "import pathlib, re\ntext = pathlib.Path('README.md').read_text()\n"
    "code = re.search(r'## Ten lines\\n\\n```python\\n(.*?)```', text, re.S)[1]"
)
#: The README's 100 cases and kernel.
DATA_100 = (
    "import numpy as np\nimport gpc_compare as gc\nrng = np.random.default_rng(0)\n"
    "X = rng.normal(size=(100, 2))\ny = (X[:, 0] + 0.5 * rng.normal(size=100) > 0).astype(int)\n"
    "k = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)"
)
#: The same draw at n = 30.
DATA_30 = DATA_100.replace("size=(100, 2)", "size=(30, 2)").replace("size=100)", "size=30)")
#: 5,000 cases of the benchmarks' 2-D synthetic data (benchmarks/_common.py), SE(1, 1).
N5000 = (
    "import sys\nsys.path.insert(0, 'benchmarks')\nimport numpy as np\nimport gpc_compare as gc\n"
    "from _common import make_data\nX, y = make_data(5000)\n"
    "k = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)\n"
)
#: A Gaussian posterior's parts at n = 2000 with a quarter of the sites absent (W = 0).
WEAK = (
    "import numpy as np\nfrom scipy.linalg import lapack\nimport gpc_compare as gc\n"
    "from gpc_compare.numerics import solve_lower\n"
    "from gpc_compare.posterior.gaussian import marginal_variances\n"
    "rng = np.random.default_rng(0)\nn = 2000\nX = rng.normal(size=(n, 2))\n"
    "K = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)(X)\n"
    "W = rng.uniform(0.05, 0.25, n)\nW[: n // 4] = 0.0\nsW = np.sqrt(W)\n"
    "L = np.linalg.cholesky(np.eye(n) + sW[:, None] * K * sW)\n"
)

#: The MCMC engine's whitened PyMC model at n = 300, as it builds it for PyMC's sampler.
NUTPIE_SETUP = (
    "import sys\nsys.path.insert(0, 'benchmarks')\nimport nutpie\nimport gpc_compare as gc\n"
    "from _common import make_data\nfrom gpc_compare.engines import Problem\n"
    "from gpc_compare.engines._mcmc_models import fixed_model, whiten\n"
    "from gpc_compare.likelihoods import get_likelihood\n"
    "from gpc_compare.numerics import JITTER, cholesky\nX, y = make_data(300)\n"
    "k = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)\n"
    "problem = Problem(X, 2.0 * y - 1.0, k, get_likelihood('probit'))\nK = k(X)\n"
    "model = fixed_model(problem, cholesky(K, jitter=JITTER), whiten(problem, K, 'ep'))"
)
#: The studies' index, written by hand.
INDEX = "results/README.md"


def index_row(script: str, cell: str) -> tuple[str, str]:
    """A row of the studies' index (results/README.md): its command and time cell."""
    return (INDEX, f"`gpc-compare run studies/{script}` | {cell}")
