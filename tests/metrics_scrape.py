"""Scrape a Ferry service's ``/metrics`` and ``/health`` over real HTTP, for tests.

``scrape(url)`` parses the Prometheus text format with prometheus-client's own parser and
indexes every sample by name and labels; ``health(url)`` returns (HTTP status, JSON body).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Scrape", "health", "scrape"]

TIMEOUT_S = 10.0


@dataclass
class Scrape:
    """Samples of one scrape: ``(name, sorted label items) -> value``."""

    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]

    def value(self, name: str, **labels: str) -> float:
        """The one sample with exactly these labels; KeyError naming what exists."""
        key = (name, tuple(sorted(labels.items())))
        if key not in self.samples:
            near = [k for k in self.samples if k[0] == name]
            raise KeyError(f"no sample {name}{labels}; have {near[:10]}")
        return self.samples[key]

    def matching(self, name: str, **labels: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Every sample of ``name`` whose labels include ``labels``."""
        want = set(labels.items())
        return {k[1]: v for k, v in self.samples.items()
                if k[0] == name and want <= set(k[1])}

    def names(self) -> set[str]:
        """Every sample name (``_total``, ``_bucket`` ... included)."""
        return {name for name, _ in self.samples}


def scrape(base_url: str, accept: str | None = None) -> Scrape:
    request = urllib.request.Request(base_url + "/metrics",
                                     headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return Scrape(samples)


def health(base_url: str, path: str = "/health") -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(base_url + path, timeout=TIMEOUT_S) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
