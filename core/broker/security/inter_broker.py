"""How a broker connects to another broker's ``inter.broker.listener.name`` (a follower's
fetcher to its leader), with the settings Kafka's brokers use for it:

* the protocol is that listener's in ``listener.security.protocol.map``;
* SASL: ``sasl.mechanism.inter.broker.protocol`` (Kafka's default is GSSAPI, which Ferry
  does not speak; here PLAIN), the user and password from the ``username``/``password``
  options of ``listener.name.<name>.<mechanism>.sasl.jaas.config`` (else
  ``sasl.jaas.config``), as Kafka's PlainLoginModule and ScramLoginModule take them;
* TLS: the listener's ``ssl.truststore.location`` to trust the other broker's
  certificate, its ``ssl.keystore.location`` as this broker's client certificate (when
  the listener asks for one), ``ssl.endpoint.identification.algorithm`` (``https`` by
  default, as in Kafka: the certificate names the advertised host).

The client side itself is ``core.protocol.client_security.ClientSecurity`` (one home for it).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.broker.config import BrokerConfigError
from core.broker.security.listeners import listener_setting, resolve_listeners
from core.protocol.client_security import ClientSecurity, ClientSecurityError

__all__ = ["inter_broker_security"]

DEFAULT_MECHANISM = "PLAIN"


def inter_broker_security(settings: Mapping[str, str], listener: str) -> ClientSecurity:
    """The client settings for ``listener`` (the inter-broker listener's name); raises
    BrokerConfigError naming the key."""
    specs = {spec.name: spec for spec in resolve_listeners(settings)}
    spec = specs.get(listener.upper())
    if spec is None:
        raise BrokerConfigError(f"inter.broker.listener.name {listener} is not one of the "
                                "listeners", key="inter.broker.listener.name")
    client: dict[str, str] = {"security.protocol": spec.protocol}
    if spec.uses_sasl:
        mechanism = str(settings.get("sasl.mechanism.inter.broker.protocol")
                        or DEFAULT_MECHANISM).strip().upper()
        client["sasl.mechanism"] = mechanism
        client["sasl.jaas.config"] = listener_setting(
            settings, spec.name, f"{mechanism.lower()}.sasl.jaas.config") or str(
            settings.get("sasl.jaas.config", ""))
    if spec.uses_tls:
        for key in ("ssl.truststore.location", "ssl.keystore.location", "ssl.key.password",
                    "ssl.endpoint.identification.algorithm"):
            value = listener_setting(settings, spec.name, key, "\0")
            if value != "\0":
                client[key] = value
    try:
        return ClientSecurity.parse(client)
    except ClientSecurityError as exc:
        key = exc.key or "security.protocol"
        if key.startswith("sasl."):
            key = ("sasl.mechanism.inter.broker.protocol" if key == "sasl.mechanism"
                   else f"listener.name.{spec.name.lower()}."
                        f"{client.get('sasl.mechanism', DEFAULT_MECHANISM).lower()}"
                        ".sasl.jaas.config")
        raise BrokerConfigError(f"the inter-broker listener {spec.name}: {exc}",
                                key=key) from None
