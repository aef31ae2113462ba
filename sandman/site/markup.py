"""Turning memory text into safe HTML: markdown, visible control characters, diffs, templates.

Memory text comes from model output and hand edits, so nothing in it is
trusted. jinja2 escapes every value (autoescape on); the only HTML marked safe
is markdown-it's output, the fragments built here in Python for the busiest
loops (a diff's lines, a memory's fields, each value escaped by ``shown`` exactly
as a template prints it) and the links (``quote``'s output, which escaping would
not change), and markdown-it runs its ``js-default`` preset (raw
HTML off, so ``<script>`` is text) with a stricter link check than its own:
only ``http``, ``https`` and ``mailto`` links, and scheme-less relative ones,
are made clickable; ``javascript:``, ``data:``, ``file:`` and every other scheme
stay text. Control characters and bidirectional overrides are shown as
``‹U+202E›`` marks, so a line cannot display as something it is not.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from urllib.parse import quote, unquote

import jinja2
import jinja2.bccache
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

from sandman.layout import resource
from sandman.marks import visible, visible_str
from sandman.store.atomic import write_atomic

_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_SAFE_SCHEMES = ("http", "https", "mailto")
_STRIP_FROM_URL = re.compile(r"[\x00-\x20\x7f]")


def safe_link(url: str) -> bool:
    """True when ``url`` may become a clickable link: http(s), mailto, or no scheme at all.

    Whitespace and control characters are removed before the scheme is read,
    as a browser does, so ``java\\tscript:`` is caught too.
    """
    bare = _STRIP_FROM_URL.sub("", url).lower()
    match = _SCHEME.match(bare)
    if match is None:
        return not bare.startswith("//") and ":" not in bare.split("/", 1)[0]
    return match.group(1) in _SAFE_SCHEMES and (match.group(1) == "mailto" or bare[match.end():].startswith("//"))


def _link_open(self, tokens, idx, options, env):
    token = tokens[idx]
    href = token.attrGet("href") or ""
    links = env.get("links", {})
    # markdown-it percent-encodes what it normalises, so a file name may arrive encoded.
    mapped = links[href] if href in links else links.get(unquote(href)) if links else None
    if mapped is not None:
        token.attrSet("href", mapped)
    elif _SCHEME.match(href.lower()):
        token.attrSet("rel", "noopener noreferrer nofollow")
    return self.renderToken(tokens, idx, options, env)


def markdown_parser() -> MarkdownIt:
    """Return a markdown-it parser: ``js-default`` (raw HTML off) with sandman's link check."""
    parser = MarkdownIt("js-default")
    parser.validateLink = safe_link
    parser.add_render_rule("link_open", _link_open)
    return parser


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """Return ``(css class, line)`` pairs of a unified diff: ``add``, ``del``, ``hunk``, ``meta`` or ``ctx``."""
    lines = []
    in_header = True
    # Split on newlines only: str.splitlines() would also split at a form feed or U+2028 in the text.
    for line in diff.removesuffix("\n").split("\n") if diff else []:
        if line.startswith("diff --git "):
            in_header = True
        if line.startswith("@@"):
            in_header = False
            lines.append(("hunk", line))
        elif in_header:
            lines.append(("meta", line))
        elif line.startswith("+"):
            lines.append(("add", line))
        elif line.startswith("-"):
            lines.append(("del", line))
        else:
            lines.append(("ctx", line))
    return lines


def href(root: str, target: str) -> str:
    """Return the relative URL of site path ``target`` from a page whose way up is ``root``."""
    return root + quote(target)


def _finalize(value: object) -> object:
    if type(value) is str:  # nearly every value: the shortest way
        return visible_str(value)
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return visible(value)


def shown(value: object) -> Markup:
    """Return ``value`` as ``{{ value }}`` prints it in a site template: ``visible`` marks
    (markup excepted), then markupsafe's escape; for fragments built in Python."""
    return escape(_finalize(value))


def definitions(pairs) -> Markup:
    """Return ``<dt>key</dt><dd>value</dd>`` and a newline for each ``(key, value)`` pair,
    each printed as ``shown`` prints it: a memory's fields, a commit's trailers."""
    return Markup("".join(f"<dt>{shown(key)}</dt><dd>{shown(value)}</dd>\n" for key, value in pairs))


def diff_html(diff: str) -> Markup:
    """Return a unified diff as ``<span class="add|del|hunk|meta|ctx">line</span>`` lines
    (``diff_lines``) joined by newlines, each line printed as ``shown`` prints it.

    The marks and the escape are applied to the lines joined, once per diff: neither
    touches a newline nor makes one, so each line comes out as it would alone.
    """
    pairs = diff_lines(diff)
    texts = str(shown("\n".join(line for _, line in pairs))).split("\n") if pairs else []
    return Markup("\n".join(f'<span class="{css}">{text}</span>' for (css, _), text in zip(pairs, texts)))


class CompiledTemplates(jinja2.BytecodeCache):
    """jinja2's compiled templates kept in ``folder`` (``<key>.cache``; jinja2 checks each
    against its template's source), written by store.atomic without fsync: a lost or torn
    file only means compiling that template again (jinja2 ignores a file it cannot load)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            with open(self.folder / f"{bucket.key}.cache", "rb") as handle:
                bucket.load_bytecode(handle)
        except OSError:
            pass

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = io.BytesIO()
        bucket.write_bytecode(data)
        try:
            write_atomic(self.folder / f"{bucket.key}.cache", data.getvalue(), durable=False)
        except OSError:
            pass  # a cache: the next render compiles it again


def environment(templates: Path | None = None, compiled: Path | None = None) -> jinja2.Environment:
    """Return the site's jinja2 environment: templates from ``templates/``, autoescape on.

    Every printed value is first passed through ``visible`` (markup excepted),
    then escaped. Filters: ``markdown(links)`` (the only safe markup),
    ``diff_lines``, ``diff_html`` and ``definitions`` (fragments built in Python, each value
    printed as ``shown`` prints it), ``href`` (a site path made relative to the page, from its
    ``root``), ``link`` (``href``, or ``[path, fragment]`` with the fragment quoted). ``compiled``: a folder where jinja2 keeps the compiled templates between
    runs (its ``FileSystemBytecodeCache``, checked against each template's source, written
    by store.atomic), so a render that writes a few pages does not compile every template
    again. A template is loaded once per environment and not checked for changes again
    (one environment serves one render). Raises FileNotFoundError when the templates are not installed.
    """
    cache = CompiledTemplates(compiled) if compiled is not None else None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates or resource("templates"))),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=cache,
        auto_reload=False,
    )
    parser = markdown_parser()
    # Every page links the same paths (the header's, its bank's): each is quoted once per render,
    # each way up printed once. What quote() makes (letters, digits, '_.-~/' and %XX) is printed as
    # it is, so a link comes out as markup, exactly as `{{ }}` would print it, and is not escaped again.
    quoted: dict[str, str] = {}
    roots: dict[str, str] = {}

    def relative(root: str, target: str) -> Markup:
        found = quoted.get(target)
        if found is None:
            found = quoted[target] = quote(target)
        up = roots.get(root)
        if up is None:
            up = roots[root] = str(shown(root))
        return Markup(up + found)

    def markdown(text: str, links: dict[str, str] | None = None) -> Markup:
        return Markup(parser.render(visible(text), {"links": links or {}}))

    @jinja2.pass_context
    def href_filter(context, target: str) -> Markup:
        return relative(context["root"], target)

    @jinja2.pass_context
    def link_filter(context, target: str | list) -> Markup:
        # A site path, or [site path, fragment]: the fragment is quoted apart, so a '#' stays itself.
        if isinstance(target, (list, tuple)):
            return relative(context["root"], target[0]) + "#" + quote(target[1], safe="")
        return relative(context["root"], target)

    env.filters.update(markdown=markdown, diff_lines=diff_lines, diff_html=diff_html, definitions=definitions,
                       href=href_filter, link=link_filter)
    return env
