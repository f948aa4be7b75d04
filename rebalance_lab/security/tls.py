"""TLS for the SSL and SASL_SSL listeners, through Python's ``ssl``.

``--ssl-certfile``/``--ssl-keyfile`` are the broker's certificate chain and key (PEM, Kafka's
``ssl.keystore.*``); ``--ssl-cafile`` is the CA that signs client certificates (``ssl.truststore.*``),
and giving it turns on ``ssl.client.auth=required``, as mutual TLS needs.

The principal of a client with a certificate is what Kafka's ``DefaultKafkaPrincipalBuilder`` makes
with the default ``ssl.principal.mapping.rules``: ``"User:" +`` the subject's distinguished name as
``X500Principal.getName()`` writes it (RFC 2253: the most specific part first, e.g.
``CN=alice,OU=Testing,O=Example``). Without a client certificate the principal is ANONYMOUS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

ANONYMOUS = "User:ANONYMOUS"

# The attribute keywords X500Principal prints in RFC 2253 form (others appear as OIDs in Java;
# here as the names Python gives them, listed in FIDELITY.md).
_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID",
}
_SPECIAL = ',+"\\<>;'


class TlsConfigError(ValueError):
    """The certificate, key or CA files cannot be used (the message names the file)."""


def server_context(certfile: str, keyfile: str | None, cafile: str | None) -> ssl.SSLContext:
    import ssl  # here: loading OpenSSL is ~10% of a plain serve's start, which never needs it (issue 22)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # Kafka's ssl.enabled.protocols: TLSv1.2,TLSv1.3
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load the certificate {certfile} / key {keyfile or certfile}: {exc}") from exc
    if cafile:
        try:
            context.load_verify_locations(cafile)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"cannot load the CA file {cafile}: {exc}") from exc
        context.verify_mode = ssl.CERT_REQUIRED  # ssl.client.auth=required
    return context


def peer_principal(ssl_object: Any) -> str:
    """``User:<subject DN>`` of the client's verified certificate, or ANONYMOUS without one."""
    if ssl_object is None:
        return ANONYMOUS
    cert = ssl_object.getpeercert()
    if not cert or "subject" not in cert:
        return ANONYMOUS
    return "User:" + rfc2253(cert["subject"])


def rfc2253(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """Python's ``getpeercert()["subject"]`` (most general RDN first) as an RFC 2253 string."""
    rdns = ["+".join(f"{_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn) for rdn in subject]
    return ",".join(reversed(rdns))


def _escape(value: str) -> str:
    out = "".join(f"\\{c}" if c in _SPECIAL else c for c in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out
