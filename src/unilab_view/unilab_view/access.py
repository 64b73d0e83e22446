# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Who may arm the robot from the view's page: the address it listens on, and a token (no ROS).

The page listens on ``127.0.0.1`` unless ``--host`` names another address: then anyone who
can reach the port can load the page. With ``--allow-arm`` on such an address, Arm and Disarm
need a secret token (``secrets.token_urlsafe``, printed once on the terminal that started
the view), compared in constant time (``hmac.compare_digest``), so an answer's timing tells a
guesser nothing; every request without it or with a wrong one is refused and counted. On a
loopback address only this machine's users reach the page, as they reach the services
``unilab arm`` calls: no token, as before.

How the token reaches the server (``unilab_view.view_node``): viser's page opens its
WebSocket at the page's address without the URL's query string, and a button's click reaches
the server as a message on that socket, so a ``?token=`` in the URL is never seen by the
code that handles the click. The page instead has an "Arm token" text field of its own
(client-scoped: its value goes to the server only, never to other pages), and the server
checks that field's value when an Arm or Disarm click arrives.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
import threading

#: the view's address unless ``--host`` says otherwise
DEFAULT_HOST = '127.0.0.1'
#: bytes of randomness in a token (``secrets.token_urlsafe``: 43 URL-safe characters)
TOKEN_BYTES = 32


def parse_host(text: str) -> str:
    """
    Return ``text`` as the address to listen on, or raise ValueError naming ``--host``.

    An IP address (v4 or v6) this machine can listen on: ``0.0.0.0`` or ``::`` for every
    interface, or one of its own addresses. A name is not taken (which address it stands
    for is the resolver's choice, and may change).
    """
    try:
        address = ipaddress.ip_address(text.strip('[]'))
    except ValueError:
        raise ValueError(f'--host {text}: not an IP address (0.0.0.0 for every interface, '
                         'or one of this machine\'s addresses)') from None
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((str(address), 0))
    except OSError as exc:
        raise ValueError(f'--host {text}: cannot listen there ({exc.strerror or exc}); '
                         'name 0.0.0.0 or one of this machine\'s addresses') from None
    return str(address)


def is_loopback(host: str) -> bool:
    """Return whether ``host`` (an IP address) is reachable from this machine only."""
    return ipaddress.ip_address(host.strip('[]')).is_loopback


def page_url(host: str, port: int) -> str:
    """Return the page's address for a person: this machine's name for ``0.0.0.0`` / ``::``."""
    address = ipaddress.ip_address(host.strip('[]'))
    if address.is_loopback:
        name = 'localhost'
    elif address.is_unspecified:
        name = socket.gethostname()
    else:
        name = f'[{address}]' if address.version == 6 else str(address)
    return f'http://{name}:{port}/'


class ArmAccess:
    """Decides whether an Arm / Disarm request from the page is carried out; counts refusals."""

    def __init__(self, host: str):
        """Make a token unless ``host`` (the address the page listens on) is loopback."""
        self.token = None if is_loopback(host) else secrets.token_urlsafe(TOKEN_BYTES)
        self.refused = 0  #: requests refused: no token, or a wrong one
        self._lock = threading.Lock()  # clicks are handled on viser's thread pool

    @property
    def needs_token(self) -> bool:
        """Return whether a request must carry the token."""
        return self.token is not None

    def allows(self, given: str | None) -> bool:
        """Return whether a request carrying ``given`` may arm / disarm; count it if not."""
        if self.token is None:
            return True
        # Bytes: compare_digest takes str only when ASCII, and a page may send anything
        # (a lone surrogate from JSON too: 'surrogatepass' encodes it instead of raising).
        ok = isinstance(given, str) and hmac.compare_digest(
            given.strip().encode('utf-8', 'surrogatepass'), self.token.encode('utf-8'))
        if not ok:
            with self._lock:
                self.refused += 1
        return ok
