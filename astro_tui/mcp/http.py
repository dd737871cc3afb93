"""Streamable HTTP, safe by default: loopback only, Host and Origin checked, a token beyond loopback.

A web page the user visits can make their browser send requests to
`127.0.0.1`, and a DNS name can be rebound to it; so every request's Host must
name this server and an Origin, when a browser sends one, must be this server's
(the SDK's transport security answers 421 and 403 otherwise). Listening on any
other address exposes the database to the network: astro refuses unless a
bearer token is configured, read from `ASTRO_MCP_TOKEN` or a file that only the
user can read — never from a flag, which `ps` shows to every user of the
machine. With a token configured, a request without it gets 401, on loopback
too.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings

from astro_tui.errors import AstroError

TOKEN_ENV = "ASTRO_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
PATH = "/mcp"
_LOOPBACK_NAMES = ("localhost",)


class HttpSetupError(AstroError):
    """The address or the token will not do; the message is one line."""


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def wildcard(self) -> bool:
        return self.host in ("0.0.0.0", "::")

    def netloc(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port if port is None else port}"


def parse_address(text: str) -> Address:
    """`HOST:PORT`, `[::1]:PORT`, or `PORT` alone (on 127.0.0.1)."""
    text = text.strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise HttpSetupError(f"--http {text}: give HOST:PORT, e.g. 127.0.0.1:8765")
    return Address(host, int(port))


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(token_file: str | None, environ: dict[str, str] | os._Environ[str]) -> str | None:
    """The token from the file (which must be the user's alone) or the environment; None if neither."""
    if token_file is not None:
        path = Path(token_file)
        try:
            info = path.stat()
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable text"
            raise HttpSetupError(f"--token-file {token_file}: {reason}") from None
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise HttpSetupError(
                f"--token-file {token_file}: other users can read it; run `chmod 600 {token_file}`"
            )
        token = text.strip()
    else:
        token = environ.get(TOKEN_ENV, "").strip()
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not token.isprintable() or " " in token:
        where = f"--token-file {token_file}" if token_file is not None else TOKEN_ENV
        raise HttpSetupError(
            f"{where}: the token must be at least {MIN_TOKEN_CHARS} printable ASCII characters without "
            "spaces (e.g. `openssl rand -hex 32`)"
        )
    return token


def check_exposure(address: Address, token: str | None) -> None:
    if not address.loopback and token is None:
        raise HttpSetupError(
            f"--http {address.netloc()}: listening beyond this machine needs a bearer token; set "
            f"{TOKEN_ENV} or give --token-file FILE (or listen on 127.0.0.1)"
        )


def listen(address: Address) -> socket.socket:
    """Bind before serving, so a taken port is one line at start and port 0 picks a free one.

    The socket names its protocol (TCP): asyncio turns Nagle's algorithm off only on sockets that do
    (`socket.create_server` leaves it 0), and with it on, a reply written in two pieces waits for
    the client's delayed acknowledgement — 40 ms added to every call that follows another at once.
    """
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    host = "127.0.0.1" if address.host in _LOOPBACK_NAMES else address.host
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name == "posix":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, address.port))
        sock.listen()
    except OSError as exc:
        sock.close()
        raise HttpSetupError(f"--http {address.netloc()}: {exc.strerror or exc}") from None
    return sock


def _names(address: Address) -> list[str]:
    names = ["127.0.0.1", "localhost", "::1"]
    if address.wildcard:
        hostname = socket.gethostname()
        names += [hostname, socket.getfqdn()]
        with contextlib.suppress(OSError):
            names += [str(info[4][0]) for info in socket.getaddrinfo(hostname, None)]
    elif not address.loopback:
        names.append(address.host)
    return list(dict.fromkeys(n for n in names if n))


def transport_security(address: Address, port: int) -> TransportSecuritySettings:
    hosts = [Address(name, port).netloc() for name in _names(address)]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class BearerToken:
    """The SDK's token verifier for one shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode("utf-8", "replace"), self._token):
            return AccessToken(token="(accepted)", client_id="astro-mcp-client", scopes=[])
        return None


def auth_settings(address: Address, port: int) -> AuthSettings:
    return AuthSettings(issuer_url=f"http://{address.netloc(port)}", resource_server_url=None)
