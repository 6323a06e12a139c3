"""The broker's named listeners and the security protocol of each (Kafka's config names).

``listeners=CLIENT://127.0.0.1:9092,SECURE://127.0.0.1:9093`` with
``listener.security.protocol.map=CLIENT:PLAINTEXT,SECURE:SASL_SSL`` opens two ports; a
listener named after a protocol (``SSL://...``) needs no map entry, as in Kafka.
``advertised.listeners`` gives, per listener name, what Metadata tells the clients that
connected through that listener. Parsing of ``NAME://HOST:PORT`` lists is
``core.cluster.config.parse_listeners`` (one home for it).

Settings of one listener are looked up as Kafka does: ``listener.name.<name>.<key>`` (name
lower-cased) first, then ``<key>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.broker.config import BrokerConfigError
from core.cluster.config import ClusterConfigError, parse_listeners
from core.protocol.security_protocol import SECURITY_PROTOCOLS, SecurityProtocolTraits

__all__ = [
    "ListenerSpec",
    "listener_setting",
    "resolve_listeners",
]

# Kafka's default listener.security.protocol.map: each protocol maps to itself.
_DEFAULT_MAP = {p: p for p in SECURITY_PROTOCOLS}


@dataclass(frozen=True)
class ListenerSpec(SecurityProtocolTraits):
    """One listening port: its name, protocol, bind address and what clients are told
    (``uses_tls``/``uses_sasl``: its protocol's)."""

    name: str
    protocol: str
    host: str
    port: int
    advertised_host: str
    advertised_port: int


def listener_setting(settings: Mapping[str, str], listener: str, key: str,
                     default: str = "") -> str:
    """``listener.name.<listener>.<key>`` if set, else ``<key>``, else ``default``."""
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in settings:
        return str(settings[prefixed])
    return str(settings.get(key, default))


def _protocol_map(text: str) -> dict[str, str]:
    key = "listener.security.protocol.map"
    protocols = dict(_DEFAULT_MAP)
    for item in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in SECURITY_PROTOCOLS:
            raise BrokerConfigError(
                f"Invalid value {text!r} for configuration {key}: {item!r} is not "
                f"NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}", key=key)
        protocols[name.strip().upper()] = protocol
    return protocols


def resolve_listeners(settings: Mapping[str, str], *, listen: tuple[str, int] | None = None,
                      advertised: tuple[str, int] | None = None) -> list[ListenerSpec]:
    """The listeners the broker opens. ``listen``/``advertised`` (the ``--listen`` and
    ``--advertised-listener`` flags) replace the first listener's addresses; the other
    listeners keep theirs. Raises BrokerConfigError naming the key."""
    text = str(settings.get("listeners", "")).strip()
    if text and "://" not in text:
        # A bare HOST:PORT, which the single-node broker has always accepted (Kafka needs
        # a name): one PLAINTEXT listener, so existing Ferry configs keep working.
        text = f"PLAINTEXT://{text}"
    try:
        endpoints = list(parse_listeners("listeners", text)) if text else []
        advertised_text = str(settings.get("advertised.listeners", "")).strip()
        published = {e.name: e for e in parse_listeners("advertised.listeners",
                                                          advertised_text)} \
            if advertised_text and "://" in advertised_text else {}
    except ClusterConfigError as exc:
        raise BrokerConfigError(str(exc), key=exc.key) from None
    controller = {n.strip().upper() for n in
                  str(settings.get("controller.listener.names", "")).split(",") if n.strip()}
    endpoints = [e for e in endpoints if e.name not in controller]
    protocols = _protocol_map(str(settings.get("listener.security.protocol.map", "")))
    specs: list[ListenerSpec] = []
    for index, endpoint in enumerate(endpoints or [None]):
        name = endpoint.name if endpoint else "PLAINTEXT"
        host, port = (endpoint.host, endpoint.port) if endpoint else ("127.0.0.1", 9092)
        if index == 0 and listen is not None:
            host, port = listen
        protocol = protocols.get(name)
        if protocol is None:
            raise BrokerConfigError(
                f"listener {name} has no security protocol: map it in "
                f"listener.security.protocol.map, e.g. {name}:SASL_SSL",
                key="listener.security.protocol.map")
        shown = published.get(name)
        if index == 0 and advertised is not None:
            adv_host, adv_port = advertised
        elif shown is not None:
            adv_host, adv_port = shown.host, shown.port
        else:
            adv_host, adv_port = host, port
        specs.append(ListenerSpec(name, protocol, host, port, adv_host, adv_port))
    for name in published:
        if all(s.name != name for s in specs):
            raise BrokerConfigError(
                f"advertised.listeners names {name}, which is not one of the listeners",
                key="advertised.listeners")
    inter = str(settings.get("inter.broker.listener.name", "")).strip().upper()
    if inter and all(s.name != inter for s in specs):
        raise BrokerConfigError(
            f"inter.broker.listener.name {inter} is not one of the listeners",
            key="inter.broker.listener.name")
    return specs
