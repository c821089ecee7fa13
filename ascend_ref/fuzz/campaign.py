"""Campaign files (``configs/campaigns/*.toml``): what to fuzz, how, and against what.

A campaign names the APIs, products and dtypes, the number of cases, the seed, the weights of
every random choice (:class:`~ascend_ref.fuzz.generate.Distributions`) and the comparator.
Its *identity* (``Campaign.id``) is a hash of everything that changes which cases are drawn
or how they are judged — not the case count, chunk size, shrink budget or result file — so
raising ``cases`` extends a finished campaign and an interrupted one resumes.
See ``docs/fuzz.md`` for the full reference.

>>> c = Campaign.from_dict({"campaign": {"name": "t", "apis": ["whole_reduce_sum"],
...                                       "products": ["atlas_a2"], "cases": 10}})
>>> c.apis, c.compare.kind, c.id.startswith("t-")
(['whole_reduce_sum'], 'oracle', True)
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from .. import registry
from .._toml import tomllib
from ..batch_args import is_int
from ..chips import chips as all_chips, config_dir
from ..constraints import Code, ConstraintError
from .generate import (CAMPAIGN_DTYPES, Distributions, RngDraw, breakable_rules, build_pool,
                       cover_plan, draw_campaign_case, pool_weights, template_universe)

COMPARATORS = ("oracle", "product", "command")
#: ``[compare] path`` / ``fuzz --path``
JAX_PATHS = ("fast", "general")
_CAMPAIGN_KEYS = {"name", "description", "seed", "cases", "apis", "products", "dtypes",
                  "static_configs", "chunk", "ub_bytes", "cost_balance", "invalid_rate",
                  "in_place_rate", "offset_rate", "workers"}
_TOP_KEYS = {"campaign", "compare", "shrink", "results", "distributions"}


def campaigns_dir() -> Path:
    return config_dir() / "campaigns"


@dataclass
class Compare:
    """The comparator: what the JAX reference is checked against.

    ``oracle`` — expected = the scalar oracle, actual = the JAX path (default);
    ``product`` — expected = JAX on the case's product, actual = JAX on ``product``;
    ``command`` — expected = the JAX path, actual = an external command (a device under
    test) fed through the file exchange of ``docs/fuzz.md``.
    """

    kind: str = "oracle"
    product: Optional[str] = None
    command: Optional[str] = None
    timeout_s: float = 600.0
    #: which JAX algorithms run (:func:`ascend_ref.engine.use_path`): ``"fast"`` (default:
    #: what run_batch / run_cases and the API run) or ``"general"`` (the reference
    #: algorithms the fast paths are tested against, also behind ``explain``)
    path: str = "fast"

    def identity(self) -> dict:
        ident = {"kind": self.kind, "product": self.product, "command": self.command}
        if self.path != "fast":              # campaigns stored before the field keep their id
            ident["path"] = self.path
        return ident

    def describe(self) -> str:
        jax = "JAX path" if self.path == "fast" else f"JAX {self.path} path"
        if self.kind == "oracle":
            return f"{jax} (actual) vs scalar oracle (expected)"
        if self.kind == "product":
            on = "" if self.path == "fast" else f" ({self.path} path)"
            return f"JAX{on} on {self.product} (actual) vs JAX on the case's product (expected)"
        return f"external command (actual) vs {jax} (expected): {self.command}"


@dataclass
class Shrink:
    enabled: bool = True
    budget_s: float = 120.0          # per run; mismatches left over are shrunk on the next run
    max_evaluations: int = 3000      # per mismatch
    cut_ub: bool = True              # finally cut the UB to a power of two >= 4 KiB


@dataclass
class Campaign:
    name: str
    description: str = ""
    seed: int = 0
    cases: int = 1000
    apis: list = field(default_factory=lambda: list(registry.names()))
    products: list = field(default_factory=all_chips)
    dtypes: Optional[list] = None
    static_configs: Union[int, str] = 40     # "cover": exactly the covering pool
    chunk: int = 200
    ub_bytes: Union[int, str] = "product"
    cost_balance: float = 0.5
    dist: Distributions = field(default_factory=Distributions)
    compare: Compare = field(default_factory=Compare)
    shrink: Shrink = field(default_factory=Shrink)
    db: str = "ascend-ref-fuzz.sqlite"
    workers: int = 0                 # oracle worker processes (0: in this process)
    source: str = ""                 # the TOML text (stored with the results)
    path: Optional[str] = None

    # ------------------------------------------------------------------ loading -----------
    @classmethod
    def load(cls, name_or_path: Union[str, Path, None] = None) -> "Campaign":
        """A campaign file: a path, or a name in ``configs/campaigns/`` (default ``default``)."""
        if name_or_path is not None and not isinstance(name_or_path, (str, os.PathLike)):
            raise ValueError(f"campaign {name_or_path!r}: expected a name in "
                             f"configs/campaigns/ or a path to a .toml file")
        p = Path(name_or_path) if name_or_path else campaigns_dir() / "default.toml"
        if not p.exists() and not p.suffix:
            p = campaigns_dir() / f"{p.name}.toml"
        if not p.exists():
            known = sorted(x.stem for x in campaigns_dir().glob("*.toml"))
            raise FileNotFoundError(f"no campaign {name_or_path or 'default'!s}: not a file, "
                                    f"and not one of {known} in {campaigns_dir()}")
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as e:       # a directory, unreadable, binary
            raise ValueError(f"{p}: cannot read the campaign file: "
                             f"{getattr(e, 'strerror', None) or e}") from None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{p}: {e}") from None
        c = cls.from_dict(raw, source=text, where=str(p))
        c.path = str(p)
        return c

    @classmethod
    def from_dict(cls, raw: dict, source: str = "", where: str = "campaign") -> "Campaign":
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: {type(raw).__name__} {raw!r:.60}: expected a dict of "
                             f"tables ({{'campaign': {{'name': ...}}, ...}}) as read from TOML")
        bad = set(raw) - _TOP_KEYS
        if bad:
            raise ValueError(f"{where}: unknown table(s) {sorted(bad)}; known: {sorted(_TOP_KEYS)}")
        for t in _TOP_KEYS & set(raw):
            if not isinstance(raw[t], dict):
                raise ValueError(f"{where}: {t} = {raw[t]!r}: must be a table ([{t}])")
        c = dict(raw.get("campaign", {}))
        bad = set(c) - _CAMPAIGN_KEYS
        if bad:
            raise ValueError(f"{where}: unknown [campaign] key(s) {sorted(bad)}; "
                             f"known: {sorted(_CAMPAIGN_KEYS)}")
        if "name" not in c:
            raise ValueError(f"{where}: [campaign] needs a name")
        apis = _all_or(c.get("apis"), list(registry.names()), "apis", where)
        products = _all_or(c.get("products"), all_chips(), "products", where)
        dtypes = c.get("dtypes")
        dtypes = None if _is_all(dtypes) else _all_or(dtypes, CAMPAIGN_DTYPES,
                                                                       "dtypes", where)
        _check_values(c, dict(raw.get("compare", {})), dict(raw.get("shrink", {})), where)
        rates = {k: c[k] for k in ("invalid_rate", "in_place_rate", "offset_rate") if k in c}
        try:
            dist = Distributions(raw.get("distributions", {}), **rates)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        cmp_raw = dict(raw.get("compare", {}))
        bad = set(cmp_raw) - {"kind", "product", "command", "timeout_s", "path"}
        if bad:
            raise ValueError(f"{where}: unknown [compare] key(s) {sorted(bad)}")
        cmp = Compare(**cmp_raw)
        if cmp.kind not in COMPARATORS:
            raise ValueError(f"{where}: [compare] kind = {cmp.kind!r}; one of {COMPARATORS}")
        if cmp.path not in JAX_PATHS:
            raise ValueError(f"{where}: [compare] path = {cmp.path!r}; one of {JAX_PATHS}")
        if cmp.kind == "product":
            if cmp.product not in all_chips():
                raise ValueError(f"{where}: [compare] product = {cmp.product!r}; "
                                 f"one of {all_chips()}")
        if cmp.command is not None and not isinstance(cmp.command, str):
            raise ValueError(f"{where}: [compare] command = {cmp.command!r}: must be a string "
                             f"(a shell command line, '{{dir}}' for the exchange folder)")
        if cmp.kind == "command" and not cmp.command:
            raise ValueError(f"{where}: [compare] kind = 'command' needs command = '...'")
        sh_raw = dict(raw.get("shrink", {}))
        bad = set(sh_raw) - {"enabled", "budget_s", "max_evaluations", "cut_ub"}
        if bad:
            raise ValueError(f"{where}: unknown [shrink] key(s) {sorted(bad)}")
        res = dict(raw.get("results", {}))
        bad = set(res) - {"db"}
        if bad:
            raise ValueError(f"{where}: unknown [results] key(s) {sorted(bad)}")
        ub = c.get("ub_bytes", "product")
        if not (ub == "product" or (isinstance(ub, int) and 1024 <= ub <= 262144 and ub % 64 == 0)):
            raise ValueError(f"{where}: ub_bytes = {ub!r}: 'product' or a multiple of 64 in "
                             f"[1024, 262144]")
        camp = cls(
            name=str(c["name"]), description=str(c.get("description", "")),
            seed=int(c.get("seed", 0)), cases=int(c.get("cases", 1000)), apis=apis,
            products=products, dtypes=dtypes,
            static_configs=_static_configs(c.get("static_configs", 40), where),
            chunk=int(c.get("chunk", 200)), ub_bytes=ub,
            cost_balance=float(c.get("cost_balance", 0.5)), dist=dist, compare=cmp,
            shrink=Shrink(**sh_raw), db=str(res.get("db", "ascend-ref-fuzz.sqlite")),
            workers=_workers(c.get("workers", "auto"), where), source=source)
        if not camp.universe():
            raise ValueError(f"{where}: no API / product / dtype combination is left to fuzz")
        return camp

    def to_dict(self) -> dict:
        """The campaign as a TOML-shaped dict (``from_dict(to_dict())`` gives it back, CLI
        overrides included); stored with the results so a replay needs no file."""
        c = {"name": self.name, "description": self.description, "seed": self.seed,
             "cases": self.cases, "apis": list(self.apis), "products": list(self.products),
             "static_configs": self.static_configs, "chunk": self.chunk,
             "ub_bytes": self.ub_bytes, "cost_balance": self.cost_balance,
             "invalid_rate": self.dist.invalid_rate, "in_place_rate": self.dist.in_place_rate,
             "offset_rate": self.dist.offset_rate, "workers": self.workers}
        if self.dtypes:
            c["dtypes"] = list(self.dtypes)
        cmp = {k: v for k, v in vars(self.compare).items() if v is not None}
        return {"campaign": c, "compare": cmp, "shrink": dict(vars(self.shrink)),
                "results": {"db": self.db},
                "distributions": {t: dict(w) for t, w in self.dist.weights.items()}}

    # ------------------------------------------------------------------ identity ----------
    def identity(self) -> dict:
        """What decides the cases and their verdicts (the hash behind :attr:`id`)."""
        return {"seed": self.seed, "apis": self.apis, "products": self.products,
                "dtypes": self.dtypes, "static_configs": self.static_configs,
                "ub_bytes": self.ub_bytes, "cost_balance": self.cost_balance,
                "dist": self.dist.as_dict(), "compare": self.compare.identity(),
                "generator": GENERATOR_VERSION}

    @property
    def id(self) -> str:
        h = hashlib.sha1(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()
        return f"{self.name}-{h[:10]}"

    # ------------------------------------------------------------------ cases -------------
    def universe(self) -> list:
        other = self.compare.product if self.compare.kind == "product" else None
        return template_universe(self.apis, self.products, self.dtypes, self.ub_bytes,
                                 self.dist, also_on=other)

    def pool(self) -> list:
        """The campaign's case templates (cached; many share one compiled kernel)."""
        if getattr(self, "_pool", None) is None:
            extra = None
            if self.dist.invalid_rate > 0:       # cover every rule a case can be drawn to break
                # per API: the coverage model's "api x rule" bins (a rule once across all
                # APIs left a bin unreachable when the one template that breaks it for an API
                # was not drawn)
                extra = lambda t: {("validity", t.api, r)           # noqa: E731
                                   for r in breakable_rules(t)
                                   if self.dist.weight("invalid", r) > 0}
            size = -1 if self.static_configs == "cover" else int(self.static_configs)
            self._pool = build_pool(self.universe(), size, self.seed, extra)
            self._weights = pool_weights(self._pool, self.cost_balance)
            self._plan = cover_plan(self._pool, self.dist, MIN_CASES_PER_CONFIG)
        return self._pool

    def plan(self) -> list:
        """The forced first cases (:func:`~ascend_ref.fuzz.generate.cover_plan`): case id
        ``i < len(plan)`` draws template, repeat class, product and validity from ``plan[i]``."""
        self.pool()
        return self._plan

    def case(self, case_id: int) -> Any:
        """Case ``case_id`` (an int >= 0): a pure function of (campaign identity, case id)."""
        if not is_int(case_id) or case_id < 0:
            raise ConstraintError(Code.BAD_ARGUMENT, api="Campaign.case", param="case_id",
                                  value=case_id, allowed="an int >= 0")
        pool = self.pool()
        d = RngDraw(self.seed, case_id)
        k = d.choice(list(range(len(pool))), self._weights)
        prefer = chip = rule = None
        if case_id < len(self._plan):     # the cover: every template at least twice, at both
            k, prefer, chip, rule = self._plan[case_id]  # ends, and every bin at least once
        case = draw_campaign_case(d, pool[k], self.dist, prefer_repeat=prefer, prefer_chip=chip,
                                  force_rule=rule)
        case.tags["case_id"] = int(case_id)
        return case

    def summary(self) -> str:
        return (f"campaign {self.name} ({self.id}): {self.cases} cases, seed {self.seed}, "
                f"{len(self.apis)} API(s) x {len(self.products)} product(s), "
                f"{len(self.pool())} case templates; {self.compare.describe()}")


#: bump when the campaign generator changes which case a (seed, case id) gives
GENERATOR_VERSION = 6        # 4: the counter mask mode (issue 14 item 4); 5: level-2 counter;
#                              6: count-form tops that fit the UB, in-place dst only where no
#                              repeat reads an earlier result (2026-12-07)
#: the first case ids follow the cover plan: at least this many per template
MIN_CASES_PER_CONFIG = 2


#: integer keys of [campaign]: (lowest, highest) allowed
INT_KEYS = {"seed": (0, 2**63 - 1), "cases": (0, 2**40), "static_configs": (0, 100_000),
            "chunk": (1, 1_000_000)}


def _check_values(c: dict, cmp_raw: dict, sh_raw: dict, where: str) -> None:
    """Type and range of every numeric key; the error names the file and the key."""
    def integer(table: str, key: str, v: Any, lo: int, hi: int) -> None:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{where}: [{table}] {key} = {v!r}: must be an integer in "
                             f"[{lo}, {hi}]")
        if not lo <= v <= hi:
            raise ValueError(f"{where}: [{table}] {key} = {v}: must be in [{lo}, {hi}]")

    def number(table: str, key: str, v: Any, lo: float, hi: float = float("inf"),
               inf_ok: bool = False) -> None:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v == v
        if not ok or not lo <= v <= hi or (v == float("inf") and not inf_ok):
            raise ValueError(f"{where}: [{table}] {key} = {v!r}: must be a number in "
                             f"[{lo}, {hi}]")

    def flag(table: str, key: str, v: Any) -> None:
        if not isinstance(v, bool):
            raise ValueError(f"{where}: [{table}] {key} = {v!r}: must be true or false")

    for k, (lo, hi) in INT_KEYS.items():
        if k in c and not (k == "static_configs" and c[k] == "cover"):
            integer("campaign", k, c[k], lo, hi)
    for k in ("name", "description"):
        if k in c and not isinstance(c[k], str):
            raise ValueError(f"{where}: [campaign] {k} = {c[k]!r}: must be a string")
    if "cost_balance" in c:
        number("campaign", "cost_balance", c["cost_balance"], 0.0, 10.0)
    for k in ("invalid_rate", "in_place_rate", "offset_rate"):
        if k in c:
            number("campaign", k, c[k], 0.0, 1.0)
    if "timeout_s" in cmp_raw:
        number("compare", "timeout_s", cmp_raw["timeout_s"], 1e-3, inf_ok=True)
    if "budget_s" in sh_raw:                 # inf: no time limit (max_evaluations bounds it)
        number("shrink", "budget_s", sh_raw["budget_s"], 0.0, inf_ok=True)
    if "max_evaluations" in sh_raw:
        integer("shrink", "max_evaluations", sh_raw["max_evaluations"], 1, 10**9)
    for k in ("enabled", "cut_ub"):
        if k in sh_raw:
            flag("shrink", k, sh_raw[k])


def _static_configs(v: Any, where: str) -> Union[int, str]:
    """An int (pool size: the cover is cut there; 0: every template) or ``"cover"`` (the whole
    covering pool, nothing more)."""
    if v == "cover":
        return v
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    raise ValueError(f"{where}: static_configs = {v!r}: 'cover' or an int >= 0")


def _workers(v: Any, where: str) -> int:
    """``"auto"``: one oracle worker process when there are at least 2 CPUs, else none."""
    if v == "auto":
        import os

        return 1 if (os.cpu_count() or 1) >= 2 else 0
    if is_int(v) and 0 <= v <= 64:                    # not a bool: workers = true
        return int(v)
    raise ValueError(f"{where}: workers = {v!r}: 'auto' or an int in [0, 64]")


def _is_all(v: Any) -> bool:
    """None, ``"all"`` or ``["all"]`` (no ``in`` test: an array would compare elementwise)."""
    return v is None or (isinstance(v, str) and v == "all") or \
        (isinstance(v, list) and len(v) == 1 and isinstance(v[0], str) and v[0] == "all")


def _all_or(v: Any, universe: list, key: str, where: str) -> list:
    if _is_all(v):
        return list(universe)
    if isinstance(v, str):
        v = [v]
    if isinstance(v, (list, tuple)) and not v:        # [] is an error, not "all"
        raise ValueError(f"{where}: [campaign] {key} = []: no API / product / dtype "
                         f"combination is left to fuzz; 'all' or a non-empty list")
    if not isinstance(v, (list, tuple)):
        raise ValueError(f"{where}: [campaign] {key} = {v!r}: 'all', a name or a non-empty "
                         f"list of names; known: {universe}")
    bad = [x for x in v if not isinstance(x, str) or x not in universe]
    if bad:
        raise ValueError(f"{where}: [campaign] {key}: unknown {bad}; known: {universe}")
    return list(v)

