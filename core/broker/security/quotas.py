"""Client quotas: byte rates and request time per user, client id or both (Kafka's design
§4.9, KIP-13, KIP-55, KIP-124, KIP-219).

A quota is set on an entity: ``user``, ``client-id`` or both, each named or the default
(name None, ``<default>`` in kafka-configs). A request by (user, client id) takes the
first entity that has the quota in Kafka's order: user+client, user+default client, user,
default user+client, default user+default client, default user, client, default client.
The rate is measured over ``quota.window.num`` samples of ``quota.window.size.seconds``
and shared by all connections of the entity the quota came from (a user-level quota is
shared by every client id of that user; a (user, client) quota by that pair only).

A request that takes the measured rate over the quota gets a throttle time
``(rate - quota) / quota * window`` (Kafka's ``QuotaUtils.throttleTime``): the broker
answers at once with it in ``throttle_time_ms`` and then mutes the connection that long
(KIP-219), so a noisy client waits without holding up others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.broker.security.store import QuotaEntity, QuotaStore

__all__ = [
    "CONSUMER_BYTE_RATE",
    "ENTITY_TYPES",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "ClientQuotaManager",
    "InvalidQuotaError",
    "QuotaAlteration",
    "QuotaFilter",
    "Rate",
    "alteration_problem",
    "make_entity",
]

log = logging.getLogger(__name__)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
#: The quota keys Ferry enforces.
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
USER, CLIENT_ID = "user", "client-id"
ENTITY_TYPES = (USER, CLIENT_ID)


class InvalidQuotaError(ValueError):
    """A quota entity, key or value AlterClientQuotas refuses; the message says why."""


class Rate:
    """Kafka's sampled ``Rate``: the sum of values recorded in the last ``samples`` windows
    over the time they span (at least ``samples - 1`` whole windows, so that one burst
    right after a quiet time is not measured over a few milliseconds)."""

    def __init__(self, samples: int, window_s: float) -> None:
        self.samples = samples
        self.window_s = window_s
        self._windows: list[list[float]] = []  # [start, total], oldest first

    def record(self, value: float, now: float) -> None:
        if not self._windows or now >= self._windows[-1][0] + self.window_s:
            self._windows.append([now, 0.0])
            del self._windows[:-self.samples]
        self._windows[-1][1] += value

    def unrecord(self, value: float) -> None:
        if self._windows:
            self._windows[-1][1] -= value

    def measure(self, now: float) -> float:
        horizon = now - self.samples * self.window_s
        windows = [w for w in self._windows if w[0] + self.window_s > horizon]
        if not windows:
            return 0.0
        elapsed = now - windows[0][0]
        elapsed = max(elapsed, (self.samples - 1) * self.window_s)
        return sum(w[1] for w in windows) / elapsed

    def window_size(self, now: float) -> float:
        """Kafka's ``Rate.windowSize``: the span the rate is measured over, in seconds."""
        if not self._windows:
            return (self.samples - 1) * self.window_s
        return max(now - self._windows[0][0], (self.samples - 1) * self.window_s)


@dataclass(frozen=True)
class QuotaFilter:
    """One DescribeClientQuotas component: match type 0 exact name, 1 the default,
    2 any entity of the type (including the default)."""

    entity_type: str
    match_type: int
    match: str | None = None


@dataclass(frozen=True)
class QuotaAlteration:
    """One AlterClientQuotas entry: set each key to a value, or remove it (None)."""

    entity: QuotaEntity
    ops: Mapping[str, float | None]


def make_entity(pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """Validate and sort an entity given as (type, name or None) pairs."""
    # keyed so that a default (None) and a name of one type sort without comparing them
    entity = tuple(sorted(pairs, key=lambda p: (p[0], p[1] is not None, p[1] or "")))
    types = [t for t, _ in entity]
    if not entity:
        raise InvalidQuotaError("a quota entity needs a user or a client-id")
    for t in types:
        if t not in ENTITY_TYPES:
            raise InvalidQuotaError(f"entity type {t!r} is not supported by Ferry's client "
                                    f"quotas (use {' or '.join(ENTITY_TYPES)})")
    if len(set(types)) != len(types):
        raise InvalidQuotaError("an entity names each entity type at most once")
    return entity


class ClientQuotaManager:
    """Every quota of the broker and the rates measured against them. Thread-safe."""

    def __init__(self, store: QuotaStore, *, samples: int = 11, window_s: float = 1.0,
                 clock: callable = time.monotonic) -> None:  # type: ignore[valid-type]
        self._store = store
        self.samples = samples
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._version = store.quotas_version()
        self._quotas: dict[QuotaEntity, dict[str, float]] = store.load_quotas()
        self._rates: dict[tuple[str, str, str], Rate] = {}
        #: Seconds of throttling imposed, per quota key (for /metrics and tests).
        self.throttled_s: dict[str, float] = dict.fromkeys(QUOTA_KEYS, 0.0)

    def _refresh(self) -> dict[QuotaEntity, dict[str, float]]:
        """The quotas, reloaded if the store changed behind this manager (the cluster
        metadata; none while it is not loaded yet)."""
        version = self._store.quotas_version()
        if version != self._version:
            self._quotas = self._store.load_quotas() if version is not None else {}
            self._version = version  # after the load: a change meanwhile reloads again
        return self._quotas

    @property
    def active(self) -> bool:
        return bool(self._refresh())

    # ------------------------------------------------------------------ enforcement

    def quota_for(self, user: str, client_id: str, key: str
                  ) -> tuple[float, tuple[str, str]] | None:
        """The quota of ``key`` that applies, with the (user, client id) its rate is shared
        under ("" where the quota is not per that part), or None."""
        u, c = (USER, user), (CLIENT_ID, client_id)
        du, dc = (USER, None), (CLIENT_ID, None)
        order = (((c, u), (user, client_id)), ((dc, u), (user, client_id)),
                 ((u,), (user, "")), ((c, du), (user, client_id)),
                 ((dc, du), (user, client_id)), ((du,), (user, "")),
                 ((c,), ("", client_id)), ((dc,), ("", client_id)))
        quotas = self._refresh()
        for entity, shared in order:
            value = quotas.get(entity, {}).get(key)
            if value is not None:
                return value, shared
        return None

    def record(self, key: str, user: str, client_id: str, value: float,
               now: float | None = None) -> float:
        """Record ``value`` (bytes, or request seconds x 100 for request_percentage)
        against the quota that applies; the throttle time in seconds (0: within it)."""
        if not self._refresh():
            return 0.0
        found = self.quota_for(user, client_id, key)
        if found is None:
            return 0.0
        bound, shared = found
        now = self._clock() if now is None else now
        with self._lock:
            rate = self._rates.get((key, *shared))
            if rate is None:
                rate = self._rates[(key, *shared)] = Rate(self.samples, self.window_s)
            rate.record(value, now)
            observed = rate.measure(now)
            if observed <= bound:
                return 0.0
            if bound <= 0:
                throttle = rate.window_size(now)
            else:
                throttle = (observed - bound) / bound * rate.window_size(now)
            if key == REQUEST_PERCENTAGE:
                throttle = min(throttle, self.window_s)  # as Kafka's request quota
            self.throttled_s[key] += throttle
        return throttle

    def unrecord(self, key: str, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a throttled Fetch is answered without its data)."""
        found = self.quota_for(user, client_id, key)
        if found is None:
            return
        with self._lock:
            rate = self._rates.get((key, *found[1]))
            if rate is not None:
                rate.unrecord(value)

    # ------------------------------------------------------------------ administration

    def describe(self, filters: Sequence[QuotaFilter], strict: bool
                 ) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """DescribeClientQuotas: the entities matching every filter (``strict``: and
        naming no other entity type), with their quotas."""
        for f in filters:
            if f.entity_type not in ENTITY_TYPES:
                raise InvalidQuotaError(f"entity type {f.entity_type!r} is not supported")
            if f.match_type not in (0, 1, 2):
                raise InvalidQuotaError(f"unknown match type {f.match_type}")
        if len({f.entity_type for f in filters}) != len(filters):
            raise InvalidQuotaError("each entity type may be filtered once")
        result = []
        for entity, values in sorted(self._refresh().items(), key=lambda e: repr(e[0])):
            names = dict(entity)
            if strict and set(names) != {f.entity_type for f in filters}:
                continue
            if all(_component_matches(f, names) for f in filters) and values:
                result.append((entity, dict(values)))
        return result

    def alter(self, alterations: Sequence[QuotaAlteration], validate_only: bool
              ) -> list[str | None]:
        """AlterClientQuotas: per entry, None or the reason it was refused. Valid entries
        are applied together and stored before returning (unless ``validate_only``)."""
        problems = [alteration_problem(a) for a in alterations]
        if validate_only:
            return problems
        with self._lock:
            quotas = {e: dict(v) for e, v in self._quotas.items()}
            for a, problem in zip(alterations, problems, strict=True):
                if problem is not None:
                    continue
                values = quotas.setdefault(tuple(sorted(a.entity)), {})
                for key, value in a.ops.items():
                    if value is None:
                        values.pop(key, None)
                    else:
                        values[key] = float(value)
            quotas = {e: v for e, v in quotas.items() if v}
            if quotas != self._quotas:
                self._store.save_quotas(quotas)
                self._quotas = quotas
        for a, problem in zip(alterations, problems, strict=True):
            if problem is None:
                log.info("client quotas of %s altered: %s", _entity_text(a.entity),
                         dict(a.ops))
        return problems


def alteration_problem(alteration: QuotaAlteration) -> str | None:
    """Why AlterClientQuotas refuses the entry (INVALID_REQUEST), or None: the check of
    the single node and of the cluster's controller."""
    try:
        make_entity(alteration.entity)
        for key, value in alteration.ops.items():
            if key not in QUOTA_KEYS:
                raise InvalidQuotaError(f"quota {key!r} is not supported (Ferry enforces "
                                        f"{', '.join(QUOTA_KEYS)})")
            if value is not None and not value > 0:
                raise InvalidQuotaError(f"quota {key} must be positive, got {value}")
    except InvalidQuotaError as exc:
        return str(exc)
    return None


def _component_matches(f: QuotaFilter, names: dict[str, str | None]) -> bool:
    if f.entity_type not in names:
        return False
    name = names[f.entity_type]
    if f.match_type == 0:
        return name is not None and name == f.match
    if f.match_type == 1:
        return name is None
    return True


def _entity_text(entity: QuotaEntity) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)
