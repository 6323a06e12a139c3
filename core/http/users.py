"""The users of an HTTP door, read from the files Kafka Connect and Confluent read.

* **Connect** (``PropertyFileLoginModule`` of Kafka's basic-auth extension): a properties
  file, one ``user=password`` (or ``user: password``) a line; the whole value is the
  password.
* **Schema Registry** (Jetty's ``PropertyUserStore`` behind Confluent's
  ``authentication.method=BASIC``): ``user: password,role1,role2``; a password may be
  written ``MD5:<hex digest>`` instead of in clear.
* **JAAS**: both find that file through a JAAS configuration
  (``java.security.auth.login.config``), in the section named ``KafkaConnect`` or by
  ``authentication.realm``, as the login module's ``file="..."`` option.

Passwords are compared in constant time; an unknown user costs the same comparison.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["HASH_ALGORITHMS", "JAAS_CONFIG_KEY", "UserEntry", "UserStore", "UsersFileError",
           "hash_password", "jaas_config_path", "jaas_login_file"]

#: The JVM system property (and config key) naming the JAAS configuration file.
JAAS_CONFIG_KEY = "java.security.auth.login.config"


class UsersFileError(ValueError):
    """A users or JAAS file is missing or malformed; the message names the file."""


#: Karapace's authfile hashes: PBKDF2 (5000 iterations) or scrypt (n=16384, r=8, p=1),
#: base64, over a salt string.
HASH_ALGORITHMS = ("sha1", "sha256", "sha512", "scrypt")


def hash_password(algorithm: str, salt: str, password: str) -> str:
    """A password hashed as a Karapace authfile stores it."""
    if algorithm == "scrypt":
        raw = hashlib.scrypt(password.encode(), salt=salt.encode(), n=16384, r=8, p=1)
    elif algorithm in HASH_ALGORITHMS:
        raw = hashlib.pbkdf2_hmac(algorithm, password.encode(), salt.encode(), 5000)
    else:
        raise ValueError(f"unknown password hash algorithm {algorithm!r}; expected one of "
                         f"{', '.join(HASH_ALGORITHMS)}")
    return base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class UserEntry:
    """``password`` in clear, as ``MD5:<hex>``, or (with ``algorithm``) a Karapace hash."""

    password: str = field(repr=False)
    roles: tuple[str, ...] = ()
    algorithm: str | None = None
    salt: str = ""

    def matches(self, given: str) -> bool:
        if self.algorithm is not None:
            return hmac.compare_digest(self.password,
                                       hash_password(self.algorithm, self.salt, given))
        if self.password.startswith("MD5:"):
            digest = hashlib.md5(given.encode(), usedforsecurity=False).hexdigest()
            return hmac.compare_digest(digest, self.password[4:].lower())
        return hmac.compare_digest(self.password.encode(), given.encode())


_DUMMY = UserEntry("\x00" * 16)


class UserStore:
    """Users by name. ``authenticate`` answers the entry or None."""

    def __init__(self, users: Mapping[str, UserEntry], source: str = "") -> None:
        self._users = dict(users)
        self.source = source

    def merged(self, other: UserStore) -> UserStore:
        """These users and ``other``'s (``other`` wins on a name in both)."""
        return UserStore({**self._users, **other._users},
                         ", ".join(s for s in (self.source, other.source) if s))

    def __len__(self) -> int:
        return len(self._users)

    def entry(self, user: str) -> UserEntry | None:
        return self._users.get(user)

    def authenticate(self, user: str, password: str) -> UserEntry | None:
        entry = self._users.get(user)
        ok = (entry or _DUMMY).matches(password)
        return entry if entry is not None and ok else None

    @classmethod
    def from_file(cls, path: str | Path, *, with_roles: bool) -> UserStore:
        """Read a properties users file; ``with_roles`` splits ``password,role,...``
        (Jetty's format), else the whole value is the password (Kafka's)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsersFileError(f"cannot read the users file {path}: {exc.strerror or exc}") \
                from None
        users: dict[str, UserEntry] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line[0] in "#!":
                continue
            match = re.match(r"^((?:[^:=\s\\]|\\.)+)\s*[:=\s]\s*(.*)$", line)
            if match is None or not match.group(2):
                raise UsersFileError(f"{path} line {number}: expected user: password"
                                     + (",role,..." if with_roles else ""))
            user, value = match.group(1).replace("\\", ""), match.group(2)
            if with_roles:
                password, *roles = [part.strip() for part in value.split(",")]
                if password.startswith(("CRYPT:", "OBF:")):
                    raise UsersFileError(f"{path} line {number}: {password.split(':')[0]}: "
                                         "passwords are not read by Ferry; write the "
                                         "password in clear or as MD5:<hex digest>")
                users[user] = UserEntry(password, tuple(r for r in roles if r))
            else:
                users[user] = UserEntry(value)
        return cls(users, str(path))


def jaas_login_file(jaas_path: str | Path, section: str) -> str:
    """The ``file`` option of the login module in ``section`` of a JAAS configuration."""
    try:
        text = Path(jaas_path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsersFileError(f"cannot read the JAAS configuration {jaas_path}: "
                             f"{exc.strerror or exc}") from None
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    for match in re.finditer(r"([\w.\-]+)\s*\{(.*?)\}\s*;", text, flags=re.S):
        if match.group(1) != section:
            continue
        option = re.search(r"\bfile\s*=\s*\"([^\"]*)\"", match.group(2))
        if option is None:
            raise UsersFileError(f"{jaas_path}: the login module of section {section} has "
                                 "no file=\"...\" option naming the users file")
        return option.group(1)
    raise UsersFileError(f"{jaas_path} has no section {section} {{ ... }};")


def jaas_config_path(configured: str, environ: Mapping[str, str], opts_variable: str) -> str:
    """The JAAS file: ``configured`` (the config key's value) or else the
    ``-Djava.security.auth.login.config=...`` in the JVM options variable the service reads
    (``KAFKA_OPTS``, ``SCHEMA_REGISTRY_OPTS``); "" when neither names one."""
    if configured:
        return configured
    try:
        words = shlex.split(environ.get(opts_variable, ""))
    except ValueError:
        return ""
    prefix = f"-D{JAAS_CONFIG_KEY}="
    return next((w[len(prefix):] for w in words if w.startswith(prefix)), "")
