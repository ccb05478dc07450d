"""``fit_leaderboard``: the leaderboard 1PL/2PL (:mod:`bayes_raters.leaderboard.model`) sampled by the blocked sampler
(:mod:`bayes_raters.leaderboard.sampler`), the chains side by side in forked processes where the platform allows
(:mod:`bayes_raters.leaderboard.workers`), as a
:class:`~bayes_raters.leaderboard.result.LeaderboardResult`."""

from __future__ import annotations

import sys
import time
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.fit_signature import sampler_block
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.leaderboard.convergence import leaderboard_report
from bayes_raters.leaderboard.jax_passes import JaxPasses
from bayes_raters.leaderboard.kernel import MatrixPasses
from bayes_raters.leaderboard.mixed import TYPE_VARIABLES, is_mixed, mixed_answers, mixed_posterior, type_variables
from bayes_raters.leaderboard.model import AnswerMatrix, LeaderboardSpec, answer_matrix, check_model
from bayes_raters.leaderboard.result import LeaderboardResult
from bayes_raters.leaderboard.sampler import Chain, theta_updates
from bayes_raters.leaderboard.sharded import DaskPasses
from bayes_raters.leaderboard.workers import advance_chains
from bayes_raters.results import seeded_rng
from bayes_raters.sampling import R_HAT_MAX, resolve_progressbar, warn_if_not_converged

#: ``draws=None``: sample :data:`AUTO_DRAWS` draws per chain, and :data:`AUTO_EXTEND` more while
#: the convergence check fails, up to :data:`AUTO_MAX_DRAWS`. The first 700 usually fail only the
#: largest R-hat over thousands of parameters (1.013-1.016 at 100 x 2,000, seeds 1-3); the same
#: chains passed at 900, 800 and 1,000 draws, so steps of 300 stop at 1,000
#: where steps of 700 ran to 1,400 (``models/leaderboards.md``).
AUTO_DRAWS = 700
AUTO_EXTEND = 300
AUTO_MAX_DRAWS = 2800
#: From this many checked parameters (systems + 2 x items), where the items outnumber the systems,
#: the first check comes at :data:`AUTO_DRAWS_MANY` draws per chain: over so many parameters the
#: largest R-hat of 700 draws passed 1.01 on no such shape (100 x 2,000, 200 x 10,000: 1,000 or 1,300
#: draws each), and a check that fails costs seconds there. Where systems outnumber items the
#: abilities are updated twice a sweep (:func:`~bayes_raters.leaderboard.sampler.theta_updates`) and
#: 700 draws passed on five of seven seeds at 4,278 x 102 and 5,041 x 249 (``models/leaderboards.md``).
MANY_PARAMETERS = 2000
AUTO_DRAWS_MANY = 1000


def first_block(n_systems: int, n_items: int) -> int:
    """Draws per chain before the first convergence check of ``draws=None``."""
    many = n_systems + 2 * n_items >= MANY_PARAMETERS
    return AUTO_DRAWS_MANY if many and theta_updates(n_systems, n_items) == 1 else AUTO_DRAWS


#: Posterior arrays with one value per item are stored in single precision (memory: chains x
#: draws x items; 2 x 1,000 x 10,000 is 80 MB per variable in float32).
ITEM_DTYPE = np.float32


@sampler_block(reasons={
    "draws": "None here (default): 700 (1,000 from 2,000 systems + 2 x items where items outnumber systems), "
             "and 300 more while the convergence check fails, up to 2,800 "
             "(``result.inference.draws_rule`` says how many were needed); NUTS on the joint model did not "
             "converge at this size (``models/leaderboards.md``).",
    "tune": "200 warm-up sweeps here: the blocked sampler's Newton proposals start near the mode and the second half of "
            "the sweeps fits the items' independence proposals (``benchmarks/bench_leaderboard.py``).",
})
def fit_leaderboard(
    data: pd.DataFrame,
    model: Literal["2pl", "1pl"] = "2pl",
    *,
    item_types: dict | pd.Series | None = None,
    options: int = 4,
    backend: Literal["numba", "jax"] = "numba",
    client=None,
    respondent: str = "respondent",
    item: str = "item",
    score: str = "correct",
    draws: int | None = None,
    tune: int = 200,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    progressbar: bool | None = None,
) -> LeaderboardResult:
    """Fit the leaderboard 1PL/2PL to long answers (``respondent``, ``item``, ``score`` columns; one row per
    system and item; a skipped item is an absent row) with the blocked Metropolis-within-Gibbs
    sampler of :mod:`bayes_raters.leaderboard.sampler`: a full MCMC posterior of every system's
    ability, every item's difficulty and discrimination and the item population, in minutes at
    leaderboard size (the measured times are in ``models/leaderboards.md``).

    Convergence is checked as for every fit here (R-hat <= 1.01, bulk and tail ESS >= 400 over
    ``theta``, ``a``, ``b`` and the hyperparameters); a :class:`ConvergenceWarning` says when it
    fails, and the report is in ``result.convergence``. The sampler takes no Hamiltonian steps,
    so it has no divergences (the report's count is 0); its acceptance rates per block are in
    ``sample_stats``. Same ``random_seed``, same draws.

    Parameters
    ----------
    data : pandas.DataFrame
        Long answers, one row per (system, item); the ``score`` column is 0/1 (or True/False), whole
        grades for graded items or scores in [0, 1] for bounded items (a mixed leaderboard, below).
    model : {"2pl", "1pl"}
        One slope per item (2PL) or one common slope (1PL).
    item_types : mapping or pandas.Series, optional
        A mixed leaderboard (:mod:`bayes_raters.leaderboard.responses`, 2PL only): item -> ``"2pl"``,
        ``"3pl"`` (multiple choice, weak systems guess), ``"graded"`` (ordered grades, a GRM) or
        ``"bounded"`` (a metric's score in [0, 1] with exact zeros and ones, the ordered beta). Items left
        out take what their answers reveal: 0/1 answers the 2PL, whole grades (three or more) the graded
        model, scores in [0, 1] the bounded model, so such a table is mixed without this argument.
    options : int
        The 3PL items' number of options: their guessing chance's prior is centred on 1 / ``options``.
    backend : {"numba", "jax"}
        Where the passes over the 0/1 answers run: Numba kernels on this machine's cores, or JAX on its
        default device, a GPU where it has one (:mod:`bayes_raters.leaderboard.jax_passes`; the draws equal
        Numba's up to the sums' rounding). The chains then run side by side in threads, as with ``client``.
    client : distributed.Client, optional
        Shard the passes over the 0/1 answers across the workers of this Dask cluster
        (:mod:`bayes_raters.leaderboard.sharded`): the same draws as without it for the same seed, where the
        workers have this machine's kind of CPU. The chains then run side by side in threads of this
        process (one after another on a mixed leaderboard, whose other answers stay here); ``cores``
        caps how many at once. None: every pass in this process.
    respondent, item, score : str
        Column names of the system, the item and the answer (default column ``correct``).
    {sampler_block}

    Returns
    -------
    LeaderboardResult
        The posterior (``theta`` per system, ``a``, ``b`` per item, hyperparameters), the
        per-item log-likelihood (LOO over items), tables and the convergence report.

    Examples
    --------
    >>> from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard
    >>> answers, truth = simulate_leaderboard(60, 400, random_seed=3)
    >>> result = fit_leaderboard(answers, random_seed=3, progressbar=False)
    >>> result.convergence.converged, result.system_table().columns[:4].tolist()
    (True, ['theta_mean', 'theta_sd', 'theta_lower', 'theta_upper'])
    """
    name = check_model(model)
    for label, value, least in (("draws", AUTO_DRAWS if draws is None else draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if int(value) != value or value < least:
            raise InvalidInputError(f"{label} must be a whole number >= {least}, got {value!r}.")
    if cores is not None and (int(cores) != cores or cores < 1):
        raise InvalidInputError(f"cores must be a whole number >= 1 or None, got {cores!r}.")
    draws, tune, chains = (None if draws is None else int(draws)), int(tune), int(chains)
    typed, types = (), None
    if is_mixed(data, score, item_types):
        if name != "2pl":
            raise InvalidInputError("a mixed leaderboard (item_types=..., or graded answers) takes model='2pl': each item keeps its own slope.")
        data, typed, types, _ = mixed_answers(data, item_types, options=options, respondent=respondent, item=item, score=score)
    else:
        data = answer_matrix(data, respondent=respondent, item=item, score=score)
    passes = answer_passes(data, backend, client)
    runs = [Chain(passes, name == "2pl", rng, typed) for rng in seeded_rng(random_seed).spawn(chains)]
    show = resolve_progressbar(progressbar)
    started = time.perf_counter()
    checked = ["theta", "b", "b_mean", "b_sigma"] + (["a", "log_a_mean", "log_a_sigma"] if name == "2pl" else ["a_common"])
    checked += [name for block in typed for name in TYPE_VARIABLES[block.kind.name]]
    blocks: list[list[dict]] = [[] for _ in runs]
    shape = (len(data.systems), len(data.items))
    block = first_block(*shape) if draws is None else draws
    while True:
        runs, outs = advance_chains(runs, tune, block, name=name, show=show, cores=cores, in_threads=not passes.forkable)
        tune = 0
        for chain_blocks, out in zip(blocks, outs):
            chain_blocks.append(out)
        outputs = [{key: np.concatenate([b[key] for b in chain_blocks]) for key in chain_blocks[0]} for chain_blocks in blocks]
        idata = leaderboard_tree(data, outputs, name, typed, types)
        last = draws is not None or len(outputs[0]["theta"]) + AUTO_EXTEND > AUTO_MAX_DRAWS
        report = leaderboard_report(idata["posterior"].to_dataset(), checked, stop_at_r_hat=None if last else R_HAT_MAX)
        if last or report.converged:
            break
        block = AUTO_EXTEND
    if show:
        print(file=sys.stderr)
    idata["sample_stats"].attrs["sampling_time"] = time.perf_counter() - started
    rule = (f"{draws} draws per chain" if draws is not None else
            f"{first_block(*shape)} draws per chain, {AUTO_EXTEND} more while the convergence check failed (up to {AUTO_MAX_DRAWS}): {report.draws}")
    InferenceRecord(path="metropolis_within_gibbs", sampler="bayes_raters.leaderboard.sampler" + passes.label, draws_rule=rule).write(idata)
    warn_if_not_converged(report, f"leaderboard {name.upper()}")
    return LeaderboardResult(idata=idata, spec=LeaderboardSpec(model=name), report=report)


def answer_passes(data: AnswerMatrix, backend: str, client) -> MatrixPasses | DaskPasses | JaxPasses:
    """The passes over the 0/1 answers: by Numba in this process, by JAX on its device, or sharded over
    ``client``'s Dask workers."""
    if backend not in ("numba", "jax"):
        raise InvalidInputError(f"backend must be 'numba' or 'jax', got {backend!r}.")
    if backend == "jax" and client is not None:
        raise InvalidInputError("backend='jax' runs the passes on this machine's JAX device; client= shards them with Numba on Dask "
                                "workers: pass one of the two.")
    if backend == "jax":
        try:
            return JaxPasses(data.answers)
        except ImportError as error:
            raise InvalidInputError("backend='jax' needs JAX: pip install 'bayes-raters[jax]' (a CUDA jaxlib for a GPU).") from error
    if client is None:
        return MatrixPasses(data.answers, data.answers_t)
    try:
        from distributed import Client
    except ImportError as error:
        raise InvalidInputError("client= needs dask.distributed: pip install 'bayes-raters[dask]'.") from error
    if not isinstance(client, Client):
        raise InvalidInputError(f"client must be a distributed.Client (e.g. Client(LocalCluster(n_workers=2))), got {type(client).__name__}.")
    return DaskPasses(client, data.answers)


def leaderboard_tree(data: AnswerMatrix, outputs: list[dict], name: str, typed: tuple = (), types: pd.Series | None = None) -> xr.DataTree:
    """The DataTree of a fit: posterior, sample_stats, log_likelihood (``item_answers``: each
    item's answers, the LOO unit), observed_data (``correct`` per answer) and constant_data (the
    system and item of every answer, as positions in the ``system`` and ``item`` coords). A mixed
    leaderboard (``typed``) adds each type's variables (:func:`~bayes_raters.leaderboard.mixed.type_variables`),
    the items' ``item_type`` and ``correct`` as the score scaled to [0, 1]."""
    stack = {key: np.stack([out[key] for out in outputs]) for key in outputs[0]}
    if typed:
        stack |= mixed_posterior(stack, types, typed, np.flatnonzero(types.to_numpy() == "2pl"))
    n_chains, n_draws = stack["theta"].shape[:2]
    coords = {"chain": np.arange(n_chains), "draw": np.arange(n_draws), "system": data.systems.to_numpy(),
              "item": data.items.to_numpy()}
    sample = ("chain", "draw")
    posterior = {"theta": (sample + ("system",), stack["theta"]), "b": (sample + ("item",), stack["b"].astype(ITEM_DTYPE))}
    if name == "2pl":
        posterior["a"] = (sample + ("item",), stack["a"].astype(ITEM_DTYPE))
        posterior |= {key: (sample, stack[key]) for key in ("log_a_mean", "log_a_sigma")}
    else:
        posterior["a_common"] = (sample, stack["a_common"])
    posterior |= {key: (sample, stack[key]) for key in ("b_mean", "b_sigma")}
    if typed:
        variables, type_coords = type_variables(stack, typed, data.items.to_numpy())
        posterior |= variables
        coords |= type_coords
    stats = {key: (sample, stack[key]) for key in ("lp", "accept_theta", "accept_items", "accept_scale")}
    stats |= {f"accept_{block.kind.name}": (sample, stack[f"accept_typed{i}"]) for i, block in enumerate(typed)}
    answer = {"answer": np.arange(len(data.table))}
    tree = xr.DataTree.from_dict({
        "posterior": xr.Dataset(posterior, coords=coords),
        "sample_stats": xr.Dataset(stats, coords={"chain": coords["chain"], "draw": coords["draw"]}),
        "log_likelihood": xr.Dataset({"item_answers": (sample + ("item",), stack["item_loglik"].astype(ITEM_DTYPE))},
                                     coords={k: coords[k] for k in ("chain", "draw", "item")}),
        "observed_data": xr.Dataset({"correct": ("answer", data.table["correct"].to_numpy().astype(float if typed else np.int8))},
                                    coords=answer),
        "constant_data": xr.Dataset({"system_index": ("answer", data.system_index), "item_index": ("answer", data.item_index)}
                                    | ({"item_type": ("item", types.to_numpy().astype(str))} if typed else {}),
                                    coords=answer | {"system": coords["system"], "item": coords["item"]}),
    })
    return tree
