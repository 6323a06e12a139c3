"""The SASL mechanisms and principal mapping as pure functions: RFC 7677's SCRAM example,
Kafka's mapping-rule examples, and fuzzing of every decoder of client input (whatever the
bytes, the result is an answer or a SaslAuthenticationError, never another exception)."""

from __future__ import annotations

import base64
import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.broker.security.plain import PlainServer, parse_jaas_options, parse_plain_message
from core.broker.security.principal_mapping import NoMatchingRule, PrincipalMapper
from core.broker.security.sasl_errors import SaslAuthenticationError, SaslMalformedError
from core.broker.security.scram import ScramServer, credential_from_password


def test_rfc7677_scram_sha_256_example():
    credential = credential_from_password(
        "SCRAM-SHA-256", "pencil", 4096, base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    server = ScramServer("SCRAM-SHA-256", lambda user, mech: credential if user == "user"
                         else None, nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.user == "user"


def test_scram_wrong_proof_and_unknown_user():
    credential = credential_from_password("SCRAM-SHA-512", "pencil", 4096)
    server = ScramServer("SCRAM-SHA-512", lambda u, m: credential if u == "user" else None)
    server.evaluate(b"n,,n=user,r=abc")
    nonce = server._nonce
    with pytest.raises(SaslAuthenticationError, match="Invalid user credentials"):
        server.evaluate(f"c=biws,r={nonce},p={base64.b64encode(bytes(64)).decode()}".encode())
    other = ScramServer("SCRAM-SHA-512", lambda u, m: None)
    with pytest.raises(SaslAuthenticationError, match="Invalid user credentials"):
        other.evaluate(b"n,,n=mallory,r=abc")
    with pytest.raises(SaslMalformedError, match="channel binding"):
        ScramServer("SCRAM-SHA-512", lambda u, m: credential).evaluate(
            b"p=tls-unique,,n=user,r=abc")


def test_plain_messages():
    assert parse_plain_message(b"\0alice\0pw") == ("", "alice", "pw")
    server = PlainServer({"alice": "pw"}.get)
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        server.evaluate(b"bob\0alice\0pw")
    assert server.evaluate(b"alice\0alice\0pw") == b"" and server.user == "alice"


def test_jaas_options():
    options = parse_jaas_options(
        'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="a b;c" user_admin="x\\"y" user_bob=plain;')
    assert options == {"username": "admin", "password": "a b;c", "user_admin": 'x"y',
                       "user_bob": "plain"}


@pytest.mark.parametrize(("rules", "name", "expected"), [
    ("DEFAULT", "CN=alice,OU=tenant-a", "CN=alice,OU=tenant-a"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka,OU=ServiceUsers,O=X", "kafka"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=other,OU=Users", "CN=other,OU=Users"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
     "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US", "duke@javasoft"),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U", "CN=alice,O=x", "ALICE"),
    ("RULE:^CN=([^,]*)\\/x,.*$/$1\\/y/", "CN=a/x,O=b", "a/y"),
])
def test_kafka_mapping_rules(rules, name, expected):
    assert PrincipalMapper.parse(rules).map(name) == expected


def test_mapping_without_match_and_bad_rules():
    with pytest.raises(NoMatchingRule):
        PrincipalMapper.parse("RULE:^CN=(x)$/$1/").map("CN=y")
    for bad in ("RULE:abc", "NOPE", "RULE:(/x/", "RULE:^(a)$/$2/"):
        with pytest.raises(ValueError):
            PrincipalMapper.parse(bad)


# ------------------------------------------------------------------ fuzzing

_token = st.one_of(st.binary(max_size=300), st.text(max_size=200).map(str.encode),
                   st.lists(st.sampled_from([b"n", b"y", b"p", b",", b"=", b"a=", b"n=",
                                             b"r=", b"c=", b"p=", b"s=", b"i=", b"biws",
                                             b"user", b"=2C", b"=3D", b"\0"]),
                            max_size=30).map(b"".join))


@settings(max_examples=400, deadline=None)
@given(first=_token, final=_token)
def test_fuzz_scram_server(first, final):
    credential = credential_from_password("SCRAM-SHA-256", "pw", 4096, b"salt")
    server = ScramServer("SCRAM-SHA-256", lambda u, m: credential)
    try:
        server.evaluate(first)
        server.evaluate(final)
    except SaslAuthenticationError:
        return
    pytest.fail("a random final message was accepted")


@settings(max_examples=400, deadline=None)
@given(token=_token)
def test_fuzz_plain_server(token):
    server = PlainServer({"alice": "pw"}.get)
    try:
        server.evaluate(token)
    except SaslAuthenticationError:
        return
    assert token in (b"\0alice\0pw", b"alice\0alice\0pw")


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120))
def test_fuzz_mapping_rules_and_jaas(text):
    parse_jaas_options(text)
    try:
        mapper = PrincipalMapper.parse(text)
    except ValueError:
        return
    with contextlib.suppress(NoMatchingRule):
        mapper.map("CN=alice,OU=tenant-a")
