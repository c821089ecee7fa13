"""Scale-out: per-case kernels over every local device, and work split over processes.

One small layer, used by :func:`ascend_ref.batch.run_cases` (hence fuzz campaigns,
``verify`` and ``golden``) and :func:`ascend_ref.batch.run_batch`:

* :func:`run_rows` runs a row-wise (vmapped) function on stacked per-case arrays. The case
  axis is sharded over a 1-D mesh of devices (default: all local devices, see
  :func:`use_devices`); rows are padded to a multiple of the device count and trimmed
  afterwards. Every row is computed independently of the others, so the bits do not depend
  on the number of devices (tests check 4 forced host devices against 1). With devices of
  several processes (after :func:`init_distributed`), every process passes *its own* rows,
  they are assembled with :func:`jax.make_array_from_process_local_data`, and every
  process gets its own rows back. That mode is SPMD: every process must make the same calls
  (same function, same order); :func:`ascend_ref.batch.run_batch` with
  ``devices=jax.devices()`` is the public entry to it.
* :func:`init_distributed`, :func:`process_index`, :func:`process_count`, :func:`my_share`
  and :func:`allgather_objects` split *independent* work (dump files, fuzz case ids) between
  processes and bring the per-process results together; ``ascend-ref verify`` and
  ``ascend-ref fuzz`` use them to write one report / one results store (``docs/scale.md``).

>>> import numpy as np, jax
>>> double = jax.vmap(lambda x: 2 * x)
>>> run_rows(double, np.arange(5, dtype=np.int32)).tolist()
[0, 2, 4, 6, 8]
>>> my_share(range(5), 1, 2)
[1, 3]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import os
import pickle
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import jax
import numpy as np

from .batch_args import is_int

#: environment variables read by :func:`init_distributed` (JAX's own names)
ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"

_DEVICES: Optional[Tuple] = None
_INITIALIZED = False

#: calls of :func:`run_rows` by the number of devices they were spread over (tests read it)
CALLS: collections.Counter = collections.Counter()


# ------------------------------------------------------------------ devices -----------------

def default_devices() -> Tuple:
    """Devices :func:`run_rows` uses when none are given: :func:`use_devices`' or all local."""
    return _DEVICES if _DEVICES is not None else tuple(jax.local_devices())


def checked_devices(devices: Optional[Sequence], api: str = "run_rows") -> Tuple:
    """``devices`` as a tuple of JAX devices (None: :func:`default_devices`); an empty or
    non-sequence value, or an item that is no device (the string ``"cpu"``, None), is a
    BAD_ARGUMENT error naming ``devices`` (was an AttributeError or a ValueError later)."""
    if devices is None:
        return default_devices()
    from .constraints import Code, ConstraintError

    try:                                        # a 0-d object array does not iterate
        devs = None if isinstance(devices, (str, bytes, jax.Device)) else \
            (tuple(devices) if isinstance(devices, (Sequence, np.ndarray, Iterator)) else None)
    except TypeError:
        devs = None
    if not devs or not all(isinstance(d, jax.Device) for d in devs):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="devices", value=devices,
                              allowed="None or a non-empty sequence of JAX devices, e.g. "
                                      "jax.local_devices()[:1]")
    if len(set(devs)) != len(devs):             # JAX's mesh: a raw safe_zip error at run time
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="devices", value=devices,
                              allowed="each device once (a device listed twice)")
    return devs


@contextlib.contextmanager
def use_devices(devices: Optional[Sequence]) -> Iterator[None]:
    """Within the block, batched paths (``run_cases`` and everything on it) use ``devices``
    (``None``: all local devices). ``with use_devices(jax.local_devices()[:1]): ...`` runs on
    one device."""
    global _DEVICES
    old = _DEVICES
    _DEVICES = None if devices is None else checked_devices(devices, "use_devices")
    try:
        yield
    finally:
        _DEVICES = old


def _is_global(devs: Tuple) -> bool:
    me = jax.process_index()
    return any(d.process_index != me for d in devs)


@functools.lru_cache(maxsize=None)
def _compiled(fn: Callable, devs: Tuple, donate: Tuple[int, ...]
              ) -> Tuple[Callable, Optional[jax.sharding.NamedSharding]]:
    """``fn`` jitted for ``devs``: plain on one device, rows sharded on a mesh otherwise."""
    if len(devs) == 1:
        return jax.jit(fn, donate_argnums=donate), None
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(devs), ("case",))
    rows = NamedSharding(mesh, P("case"))
    return jax.jit(fn, in_shardings=rows, out_shardings=rows, donate_argnums=donate), rows


def pad_rows(tree: Any, total: int) -> Any:
    """Every leaf (numpy) of ``tree`` with its leading axis padded to ``total`` rows with
    copies of row 0 (zeros where it has no rows): a batch of fixed shape, so one compile
    serves every chunk; the padding rows' results are dropped.

    >>> pad_rows({"a": np.array([3, 4])}, 4)["a"].tolist()
    [3, 4, 3, 3]
    """
    if not is_int(total) or total < 0:
        raise ValueError(f"pad_rows: total = {total!r}: must be an int >= 0 (rows to pad to)")

    def pad(x: Any) -> np.ndarray:
        x = np.asarray(x)
        if x.ndim == 0:
            raise ValueError(f"pad_rows: every array needs a leading (row) axis, got a 0-d "
                             f"{x.dtype} value {x!r}")
        n = x.shape[0]
        if n > total:
            raise ValueError(f"pad_rows: total = {total!r} is below the {n} row(s) of the "
                             f"input: rows are padded, never dropped")
        if n == total:
            return x
        if n == 0:
            return np.zeros((total,) + x.shape[1:], x.dtype)
        return np.concatenate([x, np.repeat(x[:1], total - n, axis=0)])

    return jax.tree_util.tree_map(pad, tree)


def _pad_rows(tree: Any, n: int, total: int) -> Any:
    """Pad every leaf's leading axis from ``n`` to ``total`` rows (:func:`pad_rows`)."""
    return tree if total == n else pad_rows(tree, total)


def _rows(tree: Any) -> int:
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        raise ValueError("run_rows needs at least one array")
    for x in leaves:
        if np.ndim(x) == 0:
            raise ValueError(f"run_rows: every array needs a leading (case) axis, got a 0-d "
                             f"value {x!r} (pass [B, ...] arrays, not scalars or lists)")
    n = int(np.shape(leaves[0])[0])
    for x in leaves:
        if int(np.shape(x)[0]) != n:
            raise ValueError(f"run_rows: leading axes differ ({n} vs {np.shape(x)[0]})")
    return n


def to_host(tree: Any) -> Any:
    """``jax.device_get(tree)``: the leaves of ``tree`` as (read-only) numpy arrays.

    On CPU each leaf is read with ``np.asarray``: ``device_get`` first starts an
    asynchronous host copy of every leaf, which on CPU costs more than the read itself
    (measured, 19 outputs of one run_cases kernel: ~0.7 ms against ~0.2 ms). On other
    backends (and for anything but JAX arrays) it is ``device_get``, whose batched copies
    overlap there.

    >>> import jax.numpy as jnp
    >>> to_host({"a": jnp.arange(3), "b": (jnp.ones(2, bool),)})["a"].tolist()
    [0, 1, 2]
    """
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    if not leaves or not all(isinstance(x, jax.Array) for x in leaves) or \
            any(d.platform != "cpu" for d in leaves[0].devices()):
        return jax.device_get(tree)
    return jax.tree_util.tree_unflatten(treedef, [np.asarray(x) for x in leaves])


def _donated(donate_argnums: Any, nargs: int) -> Tuple[int, ...]:
    """``donate_argnums`` as a tuple of ints; a BAD_ARGUMENT error naming it unless it is a
    tuple (or list) of positions of ``run_rows``' array arguments (``0 <= i < nargs``)."""
    if isinstance(donate_argnums, (tuple, list)) and \
            all(is_int(i) and 0 <= i < nargs for i in donate_argnums):
        return tuple(int(i) for i in donate_argnums)
    from .constraints import Code, ConstraintError

    raise ConstraintError(Code.BAD_ARGUMENT, api="run_rows", param="donate_argnums",
                          value=donate_argnums,
                          allowed=f"a tuple of argument positions in [0, {nargs}) "
                                  f"(run_rows got {nargs} array argument(s)), e.g. (0,)")


def run_rows(fn: Callable, *args: Any, devices: Optional[Sequence] = None,
             donate_argnums: Tuple[int, ...] = ()) -> Any:
    """``fn(*args)`` with the case (leading) axis of every leaf sharded over ``devices``.

    ``fn`` must be row-wise (e.g. ``jax.vmap`` of a per-case function) and a stable object
    (it keys the compile cache). ``args`` are numpy/JAX pytrees whose leaves share the
    leading axis. Returns the outputs as numpy with the same number of rows as the input.
    ``devices`` defaults to :func:`default_devices`. With devices of several processes,
    ``args`` are this process's rows and the result is this process's rows (every process
    must call with the same ``fn``; the row counts may differ between processes).
    """
    devs = checked_devices(devices)
    donate = _donated(donate_argnums, len(args))
    n = _rows(args)
    CALLS[len(devs)] += 1
    if _is_global(devs):
        return _run_global(fn, args, n, devs, donate)
    call, rows = _compiled(fn, devs, donate)
    if rows is None:
        dev = devs[0]               # donated inputs are copies: never the caller's buffer
        if donate:
            args = tuple(jax.tree_util.tree_map(lambda x: np.array(x, copy=True), a)
                         if i in donate else a for i, a in enumerate(args))
        if donate or dev != jax.devices()[0]:
            args = jax.device_put(args, dev)          # one batched transfer of every leaf
        # else numpy goes to the call as it is: the default device, no per-leaf transfer
        # (64-byte-aligned numpy is read in place on CPU)
        return to_host(call(*args))
    total = -(-max(n, 1) // len(devs)) * len(devs)
    args = jax.device_put(_pad_rows(args, n, total), rows)
    out = to_host(call(*args))
    return jax.tree_util.tree_map(lambda x: x[:n], out)


def _run_global(fn: Callable, args: Any, n: int, devs: Tuple, donate: Tuple[int, ...]) -> Any:
    """SPMD over the devices of several processes: own rows in, own rows out."""
    me = jax.process_index()
    devs = tuple(sorted(devs, key=lambda d: (d.process_index, d.id)))
    procs = sorted({d.process_index for d in devs})
    per = {p: sum(d.process_index == p for d in devs) for p in procs}
    if len(set(per.values())) != 1 or me not in per:
        raise ValueError(f"run_rows: every process needs the same number of devices in the "
                         f"mesh and this one must take part, got {per}")
    local = per[me]
    counts = allgather_objects(n)                  # every process's row count
    per_proc = -(-max(max(counts), 1) // local) * local
    call, rows = _compiled(fn, devs, donate)
    assert rows is not None          # devices of several processes: a mesh, never one device
    args = _pad_rows(args, n, per_proc)
    glob = jax.tree_util.tree_map(
        lambda x: jax.make_array_from_process_local_data(
            rows, np.asarray(x), (per_proc * len(procs),) + np.shape(x)[1:]), args)
    out = call(*glob)

    def mine(x: jax.Array) -> np.ndarray:
        shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start or 0)
        return np.concatenate([np.asarray(s.data) for s in shards])[:n]

    return jax.tree_util.tree_map(mine, out)


# ------------------------------------------------------------------ processes ---------------

def _env_int(name: str) -> int:
    """The integer in environment variable ``name`` (a ValueError naming it otherwise)."""
    try:
        return int(os.environ[name])
    except ValueError:
        raise ValueError(f"{name} = {os.environ[name]!r}: expected an integer") from None


def init_distributed(coordinator: Optional[str] = None, num_processes: Optional[int] = None,
                     process_id: Optional[int] = None) -> bool:
    """Join a multi-process run (``jax.distributed.initialize``); False when single-process.

    Arguments not given are read from ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``
    and ``JAX_PROCESS_ID``. Nothing given and no such variable: single process, nothing
    done. On CPU the cross-process collectives use gloo. Idempotent.
    """
    global _INITIALIZED
    coordinator = coordinator or os.environ.get(ENV_COORDINATOR) or None
    if num_processes is None and os.environ.get(ENV_NUM_PROCESSES):
        num_processes = _env_int(ENV_NUM_PROCESSES)
    if process_id is None and os.environ.get(ENV_PROCESS_ID):
        process_id = _env_int(ENV_PROCESS_ID)
    if coordinator is None and num_processes is None and process_id is None:
        return False
    if coordinator is None or num_processes is None or process_id is None:
        raise ValueError("a multi-process run needs the coordinator address, the number of "
                         "processes and this process's id (--coordinator HOST:PORT "
                         "--num-processes N --process-id I, or JAX_COORDINATOR_ADDRESS, "
                         "JAX_NUM_PROCESSES, JAX_PROCESS_ID)")
    host, _, port = str(coordinator).rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"coordinator {coordinator!r}: expected HOST:PORT (a port in "
                         f"[1, 65535]), the address of process 0's coordinator service")
    if not is_int(num_processes) or num_processes < 1:
        raise ValueError(f"number of processes {num_processes!r}: expected an int >= 1")
    if not is_int(process_id) or not 0 <= process_id < num_processes:
        raise ValueError(f"process id {process_id!r} is not in [0, {num_processes})")
    if _INITIALIZED:
        return True
    if num_processes > 1 and (os.environ.get("JAX_PLATFORMS", "") in ("", "cpu")):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                               process_id=process_id)
    _INITIALIZED = True
    return True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--coordinator HOST:PORT --num-processes N --process-id I`` on a CLI sub-command."""
    g = parser.add_argument_group(
        "multi-process (docs/scale.md)",
        "start the same command as N processes (one per host, or several on one host); they "
        "split the work and process 0 writes the single result. Defaults: the JAX_COORDINATOR_"
        "ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID environment variables")
    g.add_argument("--coordinator", metavar="HOST:PORT",
                   help="address of process 0's coordinator service")
    g.add_argument("--num-processes", type=int, metavar="N", help="number of processes")
    g.add_argument("--process-id", type=int, metavar="I", help="this process, 0 .. N-1")


def init_from_args(args: argparse.Namespace) -> bool:
    """:func:`init_distributed` from :func:`add_arguments`' options (and the environment)."""
    return init_distributed(getattr(args, "coordinator", None),
                            getattr(args, "num_processes", None),
                            getattr(args, "process_id", None))


def process_index() -> int:
    """This process's index (0 when single-process)."""
    return jax.process_index()


def process_count() -> int:
    """Number of processes in the run (1 when single-process)."""
    return jax.process_count()


def my_share(items: Sequence, index: Optional[int] = None,
             count: Optional[int] = None) -> list:
    """The items this process handles: every ``count``-th from ``index`` (round robin keeps
    the shares balanced when neighbouring items cost alike). Shares of all processes are
    disjoint and together are ``items``."""
    index = process_index() if index is None else index
    count = process_count() if count is None else count
    if not (is_int(count) and count >= 1 and is_int(index) and 0 <= index < count):
        raise ValueError(f"my_share: index {index!r} of count {count!r}: expected ints with "
                         f"0 <= index < count")
    return list(items)[index::count]


def allgather_objects(obj: Any) -> List[Any]:
    """Every process's ``obj`` (picklable), in process order; ``[obj]`` when single-process.

    Collective: every process must call it, in the same order.
    """
    if process_count() == 1:
        return [obj]
    from jax.experimental import multihost_utils

    data = np.frombuffer(pickle.dumps(obj, protocol=4), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.array([data.size], np.int64)))
    sizes = sizes.reshape(-1)
    buf = np.zeros(int(sizes.max()), np.uint8)
    buf[:data.size] = data
    allb = np.asarray(multihost_utils.process_allgather(buf)).reshape(len(sizes), -1)
    return [pickle.loads(allb[p, :int(sizes[p])].tobytes()) for p in range(len(sizes))]


def broadcast_object(obj: Any) -> Any:
    """Process 0's ``obj`` on every process (collective)."""
    return allgather_objects(obj if process_index() == 0 else None)[0]


__all__ = ["run_rows", "use_devices", "default_devices", "init_distributed", "add_arguments",
           "init_from_args", "process_index",
           "process_count", "my_share", "allgather_objects", "broadcast_object"]
