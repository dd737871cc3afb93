"""Connection URLs as a user may see them: never with a password or token in them."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)([^@/?#]*)@", re.I)
_SECRET_PARAMS = re.compile(r"([?&;](?:password|token|sslpassword|access_token)=)[^&;#]*", re.I)


def redact_url(url: str) -> str:
    """`postgresql://ann:secret@host/db?password=x` → `postgresql://ann:***@host/db?password=***`."""

    def userinfo(match: re.Match[str]) -> str:
        user, sep, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}{':***' if sep else ''}@"

    return _SECRET_PARAMS.sub(r"\1***", _USERINFO.sub(userinfo, url, count=1))
