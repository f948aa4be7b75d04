"""TLS listeners: the principal of a client certificate, and mutual TLS refusing a client without one."""

from __future__ import annotations

import ssl

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.security.tls import peer_principal, rfc2253, server_context
from tests.security.wire import API_VERSIONS, Closed, Wire
from tests.support.secure_broker import Pki


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """A real TLS handshake between two in-memory ends; the server's end, as the listener sees it."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server_end = server.wrap_bio(s_in, s_out, server_side=True)
    client_end = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    pending = {server_end, client_end}
    for _ in range(10):
        for end in list(pending):
            try:
                end.do_handshake()
                pending.discard(end)
            except ssl.SSLWantReadError:
                pass
        c_in.write(s_out.read())
        s_in.write(c_out.read())
        if not pending:
            break
    client_end.write(b"x")  # TLS 1.3 sends the client certificate's verdict after the handshake
    s_in.write(c_out.read())
    assert server_end.read(1) == b"x"
    return server_end


def test_the_principal_of_a_client_certificate_is_its_subject_in_rfc_2253_order(pki: Pki) -> None:
    cert, key = pki.client("alice", organization="Example Corp", unit="QA")
    client = ssl.create_default_context(cafile=pki.ca_file)
    client.load_cert_chain(cert, key)
    server_end = handshake(server_context(pki.cert_file, pki.key_file, pki.ca_file), client)
    assert peer_principal(server_end) == "User:CN=alice,OU=QA,O=Example Corp"


def test_without_a_client_certificate_the_principal_is_anonymous(pki: Pki) -> None:
    client = ssl.create_default_context(cafile=pki.ca_file)
    server_end = handshake(server_context(pki.cert_file, pki.key_file, None), client)
    assert peer_principal(server_end) == "User:ANONYMOUS"
    assert peer_principal(None) == "User:ANONYMOUS"


def test_rfc_2253_escapes_the_special_characters_as_x500_principal_does() -> None:
    subject = ((("countryName", "DE"),), (("organizationName", "Acme, Inc."),),
               (("commonName", "#bob+1"), ("userId", "b")))
    assert rfc2253(subject) == "CN=\\#bob\\+1+UID=b,O=Acme\\, Inc.,C=DE"


def test_mutual_tls_refuses_a_client_without_a_certificate_and_serves_one_with(pki: Pki) -> None:
    with Emulator(listener="SSL", ssl_certfile=pki.cert_file, ssl_keyfile=pki.key_file,
                  ssl_cafile=pki.ca_file) as emu:
        with pytest.raises((Closed, ssl.SSLError, ConnectionError)), \
                Wire.connect(emu.bootstrap_servers, cafile=pki.ca_file) as wire:
            wire.request(API_VERSIONS, 3, client_software_name="c1", client_software_version="1")
        cert, key = pki.client("carol")
        context = ssl.create_default_context(cafile=pki.ca_file)
        context.load_cert_chain(cert, key)
        with Wire.connect(emu.bootstrap_servers, context=context) as wire:
            answer = wire.request(API_VERSIONS, 3, client_software_name="c1", client_software_version="1")
            assert answer.error_code == 0
