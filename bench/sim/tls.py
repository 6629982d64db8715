"""A throw-away certificate authority and server certificate for the simulated rack's HTTPS.

Made at start with `cryptography` (EC P-256: fast to make and to handshake), written into the
simulation's work directory (a 0700 folder), each file 0600 from its creation. Clients verify
against `ca.pem`, as they would against a lab's CA.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class CertFiles:
    ca: Path        # the authority's certificate: what a client trusts (`ca_file`)
    cert: Path      # the server's certificate
    key: Path       # the server's private key


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rackclock simulated rack"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_certificates(workdir: Path, prefix: str = "sim",
                      hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")) -> CertFiles:
    """A CA and a server certificate for `hosts` (IP addresses and DNS names), valid 30 days."""
    workdir = Path(workdir)
    now = dt.datetime.now(dt.UTC)
    not_before, not_after = now - dt.timedelta(days=1), now + dt.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{prefix} CA")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder()
          .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(not_before).not_valid_after(not_after)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))

    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = []
    for h in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            alt.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder()
            .subject_name(_name(f"{prefix} server")).issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))

    files = CertFiles(workdir / f"{prefix}-ca.pem", workdir / f"{prefix}-server.pem",
                      workdir / f"{prefix}-server.key")
    _private(files.ca, ca.public_bytes(serialization.Encoding.PEM))
    _private(files.cert, cert.public_bytes(serialization.Encoding.PEM))
    _private(files.key, key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return files


def _private(path: Path, data: bytes) -> None:
    """A new file, 0600 from its creation (O_EXCL, O_NOFOLLOW: never another's file followed)."""
    from bench import safeio
    safeio.write_bytes(path, data, mode=0o600)


def server_context(files: CertFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(files.cert, files.key)
    return ctx
