"""PyYAML as the frontmatter reads and writes it (sandman.banks.frontmatter): ``yaml.safe_load``'s
loader and the safe dumper, both without the timestamp resolver, so ``created:
2026-11-30T16:01:12Z`` stays that string.

A module of its own so that importing the frontmatter module does not import
yaml (about 14 ms): a memory written with plain values never needs it (issue 29).
"""

from __future__ import annotations

import yaml

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
YAMLError = yaml.YAMLError


def _without_timestamps(resolvers: dict) -> dict:
    return {
        first: [(tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:timestamp"]
        for first, entries in resolvers.items()
    }


class Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    yaml_implicit_resolvers = _without_timestamps(_BaseLoader.yaml_implicit_resolvers)


class Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    yaml_implicit_resolvers = _without_timestamps(_BaseDumper.yaml_implicit_resolvers)


def load(text: str) -> object:
    """``yaml.load`` with ``Loader``. Raises YAMLError."""
    return yaml.load(text, Loader=Loader)


def dump(value: object, style: str | None) -> str:
    """One value as flow YAML on one line where it fits (no width limit), unicode kept; ``style`` is
    PyYAML's ``default_style`` (None, or ``'"'``)."""
    return yaml.dump(
        value, Dumper=Dumper, default_flow_style=True, width=2**31 - 1,
        allow_unicode=True, sort_keys=False, default_style=style,
    )
