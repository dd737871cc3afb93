"""How the answer printed a number, read back from the printed text, so a replay prints it alike.

The conversation keeps each quoted value and the text it became (`1234.5` →
`$1,234.50`), not the filter that made it; the printing is found by trying the
few shapes astro's filters make (`number`, `money`, `percent`, plain) and keeping
the one that gives the same text again. A text no shape gives back is kept as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from astro_tui.replay.runtime import as_number, fmt

_PRINTED = re.compile(
    r"^-?(?P<prefix>[^\d\s-]{0,5})(?P<digits>[\d,]*\d)(?:\.(?P<places>\d+))?(?P<suffix>%?)$"
)


@dataclass(frozen=True, slots=True)
class NumberFormat:
    places: int
    grouping: bool
    prefix: str
    suffix: str
    scale: int

    def show(self, value: object) -> str:
        return fmt(value, self.places, self.grouping, self.prefix, self.suffix, self.scale)

    def python(self, expression: str) -> str:
        """The notebook's code printing `expression` this way."""
        args = [expression, str(self.places), str(self.grouping)]
        if self.prefix or self.suffix or self.scale != 1:
            args += [repr(self.prefix), repr(self.suffix), str(self.scale)]
        return f"fmt({', '.join(args)})"


def number_format(value: object, text: str) -> NumberFormat | None:
    """The printing that turns `value` into `text`, or None when no shape astro makes does."""
    match = _PRINTED.match(text.strip())
    if match is None or as_number(value) is None:
        return None
    places = len(match.group("places") or "")
    digits = match.group("digits")
    grouping = "," in digits or len(digits) <= 3  # astro's filters group; a short number cannot say
    prefix, suffix = match.group("prefix"), match.group("suffix")
    for scale in (1, 100) if suffix == "%" else (1,):
        found = NumberFormat(places, grouping, prefix, suffix, scale)
        if found.show(value) == text:
            return found
    return None
