"""``RegistryClientOptions``: how Ferry's registry clients reach a secured registry, read
once from Confluent's client settings by every user of ``RegistryClient`` (the Avro and
JSON Schema converters, the Spark data source's registry formats).

=========================================  ============================================
key                                        meaning
=========================================  ============================================
``basic.auth.credentials.source``          ``URL`` (default: ``user:pass@`` in the URL)
                                           or ``USER_INFO``
``basic.auth.user.info``                   ``user:password`` for ``USER_INFO`` (also
                                           ``schema.registry.basic.auth.user.info``)
``schema.registry.ssl.truststore.location`` PEM CA certificates of the registry's HTTPS
``schema.registry.ssl.keystore.location``  PEM key and certificate (client certificate)
``schema.registry.ssl.keystore.certificate.location`` the certificate, if the keystore
                                           holds only the key
=========================================  ============================================

Stores must be PEM (``*.type`` other than ``PEM`` is refused), and a client key must not
be encrypted (``schema.registry.ssl.key.password`` is refused: the HTTP library loads the
key itself). Errors are ``ValueError`` naming the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["OPTION_KEYS", "RegistryClientOptions", "split_userinfo"]

_PREFIX = "schema.registry.ssl."
#: The setting names this module reads (for option checks of its users).
OPTION_KEYS = (
    "basic.auth.credentials.source", "basic.auth.user.info",
    "schema.registry.basic.auth.user.info", _PREFIX + "truststore.location",
    _PREFIX + "keystore.location", _PREFIX + "keystore.certificate.location",
    _PREFIX + "key.password", _PREFIX + "truststore.type", _PREFIX + "keystore.type",
)


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without ``user:pass@``, and those credentials (None if absent)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


@dataclass(frozen=True)
class RegistryClientOptions:
    """Registry URLs (credentials taken out) and how to authenticate to them."""

    urls: tuple[str, ...]
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    verify: str | bool = True
    cert: str | tuple[str, str] | None = None

    @classmethod
    def from_props(cls, urls: str | Iterable[str], props: Mapping[str, Any]
                   ) -> RegistryClientOptions:
        """``urls`` (a comma list or URLs) and the settings above from ``props``."""
        listed = urls.split(",") if isinstance(urls, str) else list(urls)
        plain: list[str] = []
        from_url: tuple[str, str] | None = None
        for url in (u.strip() for u in listed if u.strip()):
            stripped, creds = split_userinfo(url)
            plain.append(stripped)
            from_url = from_url or creds
        source = str(props.get("basic.auth.credentials.source") or "URL").strip().upper()
        if source not in ("URL", "USER_INFO"):
            raise ValueError(f"basic.auth.credentials.source: expected URL or USER_INFO, got "
                             f"{source!r}")
        auth = from_url
        if source == "USER_INFO":
            key = ("basic.auth.user.info" if props.get("basic.auth.user.info")
                   else "schema.registry.basic.auth.user.info")
            user, colon, password = _secret(props.get(key)).partition(":")
            if not colon:
                raise ValueError(f"{key}: expected user:password with "
                                 "basic.auth.credentials.source=USER_INFO")
            auth = (user, password)
        for kind in ("truststore", "keystore"):
            store_type = str(props.get(f"{_PREFIX}{kind}.type") or "PEM").strip().upper()
            if store_type != "PEM":
                raise ValueError(f"{_PREFIX}{kind}.type: Ferry reads PEM files only, not "
                                 f"{store_type}")
        if _secret(props.get(_PREFIX + "key.password")):
            raise ValueError(f"{_PREFIX}key.password: an encrypted client key is not "
                             "supported; give the key unencrypted (readable only by the "
                             "process)")
        truststore = _file(props, _PREFIX + "truststore.location")
        keystore = _file(props, _PREFIX + "keystore.location")
        certificate = _file(props, _PREFIX + "keystore.certificate.location")
        cert: str | tuple[str, str] | None = None
        if keystore:
            cert = (certificate, keystore) if certificate else keystore
        return cls(tuple(plain), auth, truststore or True, cert)

    def client(self, **kwargs: Any) -> Any:
        """A ``RegistryClient`` with these options (``kwargs``: its other arguments)."""
        from schema_registry.serde.client import RegistryClient

        return RegistryClient(self.urls, basic_auth=self.basic_auth, verify=self.verify,
                              cert=self.cert, **kwargs)


def _secret(value: Any) -> str:
    """The text of a setting that may be a ``Password`` (``.value``) or a string."""
    if value is None:
        return ""
    return str(getattr(value, "value", value))


def _file(props: Mapping[str, Any], key: str) -> str | None:
    path = str(props.get(key) or "").strip()
    if path and not Path(path).is_file():
        raise ValueError(f"{key}: no such file: {path!r}")
    return path or None
