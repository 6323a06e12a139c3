"""Build each listener's ``ListenerSecurity`` from the broker's settings (Kafka's names).

* ``sasl.enabled.mechanisms`` (per listener: ``listener.name.<l>.sasl.enabled.mechanisms``):
  PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. Kafka's default, GSSAPI, is not served, so Ferry's
  default is every mechanism it serves.
* ``listener.name.<l>.plain.sasl.jaas.config`` (or ``sasl.jaas.config``): PLAIN users as
  ``user_NAME="password"``; ``sasl.plain.users.file``: a ``NAME=password`` file.
* ``connections.max.reauth.ms`` (KIP-368, 0 = sessions never end),
  ``connection.failed.authentication.delay.ms`` (Kafka's default 100) and
  ``sasl.server.max.receive.size`` (largest frame before authentication, 512 KiB).
* ``ssl.*`` on SSL and SASL_SSL listeners (``core.broker.security.tls``).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.broker.config import BrokerConfigError
from core.broker.security.authenticator import SUPPORTED_MECHANISMS, ListenerSecurity
from core.broker.security.listeners import ListenerSpec, listener_setting
from core.broker.security.plain import PlainUsers
from core.broker.security.scram_store import ScramCredentialStore

__all__ = ["build_listener_security"]

def _int(settings: Mapping[str, str], listener: str, key: str, default: int) -> int:
    text = listener_setting(settings, listener, key, str(default)).strip()
    try:
        return int(text)
    except ValueError:
        raise BrokerConfigError(f"Invalid value {text!r} for configuration {key}: expected "
                                "a whole number", key=key) from None


def build_listener_security(spec: ListenerSpec, settings: Mapping[str, str],
                            scram: ScramCredentialStore | None) -> ListenerSecurity:
    """Raises BrokerConfigError naming the key."""
    name = spec.name
    mechanisms: tuple[str, ...] = ()
    plain_users = None
    if spec.uses_sasl:
        text = listener_setting(settings, name, "sasl.enabled.mechanisms",
                                ",".join(SUPPORTED_MECHANISMS))
        mechanisms = tuple(m.strip().upper() for m in text.split(",") if m.strip())
        unknown = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
        if unknown or not mechanisms:
            raise BrokerConfigError(
                f"sasl.enabled.mechanisms of listener {name}: {', '.join(unknown) or '(none)'}"
                f" not served; use {', '.join(SUPPORTED_MECHANISMS)}",
                key="sasl.enabled.mechanisms")
        jaas = listener_setting(settings, name, "plain.sasl.jaas.config") or \
            str(settings.get("sasl.jaas.config", ""))
        plain_users = PlainUsers.from_jaas(
            jaas, listener_setting(settings, name, "sasl.plain.users.file"))
    tls = None
    if spec.uses_tls:
        from core.broker.security.tls import TlsContext

        tls = TlsContext(settings, name)
    return ListenerSecurity(
        spec=spec, mechanisms=mechanisms, plain_users=plain_users, scram=scram,
        reauth_ms=_int(settings, name, "connections.max.reauth.ms", 0),
        failure_delay_ms=_int(settings, name, "connection.failed.authentication.delay.ms",
                              100),
        max_receive_before_auth=_int(settings, name, "sasl.server.max.receive.size", 524288),
        tls=tls)
