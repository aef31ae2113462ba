"""sandman's own secret rules: the classes of input betterleaks' rule set misses (docs/secrets.md).

Every rule reads the scan text (``scan_text``: normalised, without nonspacing marks).

Each rule is a class of input, not a list of providers:

- ``prefixed-token``: a documented fixed prefix joined to a random body
  (``whsec_``, ``GOCSPX-``, ``sntrys_``...), found by shape: a short prefix, a
  separator, and a body that mixes cases and digits with high entropy, or a
  long hex body; plus AWS key ids, which carry no separator (found glued to
  lower-case letters or symbols, and inside an upper-case run of at most 22
  characters);
- ``private-key``: any ``BEGIN ... PRIVATE KEY`` envelope (encrypted PKCS#8
  and PGP blocks included) and PuTTY key files;
- ``url-credentials``: a password in a URL's authority, whatever characters
  it holds, and a credential in a query (``sig=``, ``api_key=``) or in a
  path segment (chat webhooks, bot URLs, a webhook's segment after
  ``/webhook/``, a key after ``/keys/``);
- ``assigned-credential``: ``NAME=value`` / ``name: value`` / ``set NAME to
  value`` where the name says credential (``*_PASS``, ``*_APP_KEY``, ``SECRET_KEY``) and the value
  looks like one, ``.netrc`` and ``.pgpass`` lines; also by subscript
  (``os.environ["X_KEY"] = …``), as a call's two quoted arguments, a
  password-like name before a quoted value, a table's ``name | value`` row
  with a generated value, a credential-named function returning a literal;
- ``command-line-credential``: ``--password v``, ``--token v``, ``-p<v>``,
  ``sshpass -p``, ``curl -u user:pw``, ``login ... -p v``;
- ``authorization-header``: Basic and Bearer authorization values;
- ``session-cookie``: a ``Cookie:`` / ``Set-Cookie:`` pair whose value holds a
  random run of 20 characters or more;
- ``encoded-*``: a base64 run whose decoded text holds a secret (a key inside
  a kubeconfig, ``user:password`` in a docker config);
- ``vendor-token``: vendors' published formats (Google, Square, SendGrid,
  Databricks, Postman, Atlassian, Hugging Face, Twilio, signed JWTs) wherever
  the token ends, where betterleaks' rules want a space or a quote after it;
  ``twilio-auth-token``: 32 hex beside a Twilio account SID;
- a password stated in prose ("the admin password for staging is …", "admin
  pw: …", "Das Passwort lautet …", "log in with password <value>"), credentials
  written ``user / password`` after a credential word, ``aws configure set`` of a
  secret, a PIN or a PUK with its digits, and a
  credential in an XML element named for one (``<secret>…</secret>``), as
  ``assigned-credential``; ``aws-secret-access-key``: an AWS secret key's shape
  beside ``aws`` and ``secret``.
- ``vendor-token`` also: a JWT known by its header (``alg``/``typ``) whatever
  its payload, an Azure Container Registry password (its ``+ACR``
  signature); ``azure-storage-key``: 88 base64 characters after a key's name;
- ``vendor-keyword``: a random value right after a vendor's name
  (sandman.banks.secret_vendors), credential words and a separator between
  at most; read more loosely (a UUID, 40 hex, shorter values) when the
  vendor's name is the value's key (``onesignal: <uuid>``);
- ``vendor-token`` also: AppSync, Fly.io, Entra ID refresh tokens,
  LaunchDarkly, Tableau PAT secrets, Atlassian Data Center PATs, keys in a
  UUID's layout that are no UUID; typed examples in a vendor's exact format
  are refused, as betterleaks' are.

A value is a credential only if it is not a placeholder (``<token>``,
``${VAR}``, ``********``, ``password``, a typed ``abcdef…`` or ``xxxx…``), not
a reference to where a secret lives (``settings.SLACK_TOKEN``,
``getpass.getpass()``, ``AWS_ACCESS_KEY_ID``, a path), not a name (words and
numbers, a CI cache key, a CamelCase or UPPER_SNAKE name in code, names joined
by ``:``), not a file name or base64 of words, and looks random: it mixes
letters with digits or symbols, or is letters of both cases drawn at random.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

from sandman.banks.secret_check import (  # noqa: F401 - the pre-check and the scan text, re-exported
    _CAMEL, _DIGIT, _IDENTIFIER, _LETTER, _UPPER_WORDS, _classes, _code_name, _fold_char, _random_letters, entropy,
    scan_origin, scan_text, suspected, suspected_path,
)

# --- values ------------------------------------------------------------------

_PLACEHOLDER_WORDS = {
    "password", "passwd", "pass", "pwd", "secret", "token", "key", "apikey", "api_key", "changeme",
    "user", "username", "none", "null", "true", "false", "required", "optional", "redacted", "hidden",
    "example", "test", "dummy", "sample", "placeholder", "foo", "bar", "xxx", "mypassword", "yourpassword",
}
_PLACEHOLDER_PARTS = ("[secret]", "example", "placeholder", "your_", "your-", "yourtoken", "redacted", "changeme",
                      "xxxx")
_OPENERS = "<([{$%*!&@#"
# A value that opens like a template or a reference is a placeholder only when the rest is words too:
# `<your key>`, `${VAR}`, `$(cat ~/.token)`, `{{ vault_pw }}`, `[REDACTED]`, `%APPDATA%`, `****`.
# A generated secret may open with any of these characters (a Django key's `(bx$kit…`).
_TEMPLATE = re.compile(r"[<(\[{$%*!&@#]+[\w\s.\-:/~'\",|$=]*[>)\]}%*'\"`;,]*")
# Angle-bracket placeholders joined by plain characters, as a format is documented:
# `<type>_<slug>`, `<bank>/<file>.md`, `ev-<stamp>-<hex>`.
_SLOTS = re.compile(r"(?:[\w.\-/:]*<[\w\s.\-:/~|]+>)+[\w.\-/:]*")
_QUOTES = "'\"`"
# A slot a program fills (`--{name}`, `{password}`, `%(token)s`, an f-string's call `{g.password()}`): the value is a
# template.
_FORMAT_SLOT = re.compile(r"\{[A-Za-z_][\w.]*(?:\([^{}\s]*\))?\}|%\([A-Za-z_]\w*\)s")
_SENTENCE_END = ".,;:!?)"
# A reference to where a secret lives: dotted names, calls, subscripts, generics.
_CODE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(.*|\[.*)?$")
# Words joined by - _ . : (a URN's `grant-type:jwt-bearer`) or an apostrophe (a possessive, a contraction:
# `Microsoft's`, `isn't`).
_WORDS = re.compile(r"^_*[A-Za-z]+(?:(?:[-_.:]|['’](?=[a-z]{1,2}\b))[A-Za-z]+)*_*$")
_PATH = re.compile(r"^(?:\.{0,2}/|~/|[\w.-]+/)[\w./-]*$")


# A character typed four times or more in a row (`5555555dAAAAA7777777…`): improbable in a generated secret.
_REPEATED = re.compile(r"(.)\1{3,}")


def _sequential(value: str, run: int = 6) -> bool:
    """True when ``value`` holds ``run`` characters in alphabet or counting order (``abcdef``, ``123456``):
    typed by a person writing an example, improbable in a generated secret."""
    steps = 0
    for a, b in zip(value, value[1:]):
        steps = steps + 1 if ord(b) - ord(a) == 1 and a.isalnum() and b.isalnum() else 0
        if steps >= run - 1:
            return True
    return False


def _interleaved(value: str) -> bool:
    """True when the letters of ``value`` alone, or its digits alone, run six in sequence: an example typed by
    alternating them (``a1b2c3d4-e5f6-g7h8-…``), improbable in a generated secret. Read for a key in a UUID's
    layout only, whose shape is weaker evidence than a prefix or a name."""
    return (_sequential("".join(c for c in value if c.isalpha())) or _sequential("".join(c for c in value if c.isdigit())))


def placeholder(value: str, *, typed: bool = True) -> bool:
    """True when ``value`` stands for a credential rather than being one (``<token>``, ``password``, ``****``).

    With ``typed``, also an example a person typed rather than a generated value: six characters in
    sequence (``abcdef``, ``123456``), one character making more than half of 12 or more (``xxxx…``,
    ``glc_1111…``), or runs of one character typed four times or more making half of 12 or more
    (``5555555dAAAAA7777777…``). betterleaks' findings are passed with ``typed=False``: its rules carry their own
    entropy gates, and gitleaks' true positives include typed values in a vendor's format."""
    value = value.strip(_QUOTES)
    lowered = value.lower()
    return (not value or value[0] in _OPENERS and bool(_TEMPLATE.fullmatch(value)) or bool(_SLOTS.fullmatch(value))
            or lowered in _PLACEHOLDER_WORDS
            or len(set(value)) <= 2 or typed and _sequential(lowered)
            or typed and len(value) >= 12 and Counter(lowered).most_common(1)[0][1] * 2 > len(value)
            or typed and len(value) >= 12
            and sum(len(run.group(0)) for run in _REPEATED.finditer(lowered)) * 2 >= len(value)
            or any(part in lowered for part in _PLACEHOLDER_PARTS) or bool(_FORMAT_SLOT.search(value)))


def _filler(value: str) -> bool:
    """True when one character makes more than half of ``value`` (``AIzaaaaa…``, ``hvb.aaaa…``): filler, not a key."""
    return Counter(value.lower()).most_common(1)[0][1] * 2 > len(value) if value else True


def _short_gate(value: str) -> float:
    """The entropy a generated ``value`` reaches, in bits per character: 3.5, or ``log2(length) - 1`` for a value
    too short to reach it (16 characters hold at most 4 bits each; a random 16 often holds 3.4)."""
    return min(3.5, math.log2(len(value)) - 1.0) if value else 0.0


# sandman's own record ids (docs/BANK-FORMAT.md § trail, § shifts, § breath): an event (and so a proposal),
# a shift, a breath, a pass. A breath event's `"pass": "p-…"` is a pass id, not a password.
_SANDMAN_ID = re.compile(r"ev-\d{8}T\d{6}Z-[0-9a-f]{6}|s-\d{8}T\d{4}(?:\d{2})?Z|b-\d{8}-[0-9a-f]{10}"
                         r"|p-\d{8}T\d{6}Z-[0-9a-f]{4}")


# A memory's file key as sandman names it (docs/BANK-FORMAT.md, "Memory files"): `<type>_<slug>`, the
# slug lowercased words joined by `_`. The retired ledger's `"key"` holds one; its memory already passed
# the ban, and the same value refused in the ledger stopped every forget and upkeep of that memory.
_MEMORY_KEY = re.compile(r"(?:user|feedback|project|reference)(?:_[^\W_A-Z]+){2,}(?:\.md)?")


def credential_like(value: str, minimum: int = 6, *, named: bool = False) -> bool:
    """True when ``value`` (quotes and sentence punctuation trimmed) looks like a credential.

    At least ``minimum`` characters; not a placeholder, a code reference
    (``settings.SLACK_TOKEN``, ``getpass.getpass()``, ``Optional[str]``), a
    run of words (``db-credentials``, ``AWS_ACCESS_KEY_ID``), a path or a URL;
    and a mix of letters with digits or symbols.

    With ``named`` (the value is assigned to a credential's name), a value of
    24 characters or more mixing letters with digits is read as a credential
    even when typed in sequence (``1234567890abcdef…``, ``ABCDEfghij…0123…``):
    see ``typed_credential``.
    """
    # Markdown escapes (`\[private\]` in a MEMORY.md line) are not part of the value.
    value = value.strip(_QUOTES).rstrip(_SENTENCE_END).strip(_QUOTES).replace("\\", "")
    if len(value) < minimum or "://" in value or _SANDMAN_ID.fullmatch(value):
        return False
    if placeholder(value) and not (named and typed_credential(value)):
        return False
    if _MEMORY_KEY.fullmatch(value):
        return False
    # A dotted name in code (`settings.SLACK_TOKEN`), perhaps opening a list or a tuple (`[projects.stat().st_ino,`);
    # parts that are generated make a token (`<random>.<random>`).
    code = value.lstrip("[(")
    if _CODE.match(code) and ("." in code or "(" in code or "[" in code) and not (
            "(" not in code and "[" not in code and any(len(part) >= 24 and _random(part) for part in code.split("."))):
        return False
    if _random_letters(value):
        return True
    if _WORDS.match(value) or _PATH.match(value) and "/" in value and not _random(value.split("/")[-1]):
        return False
    return any(c.isalpha() for c in value) and any(not c.isalpha() for c in value)


def typed_credential(value: str) -> bool:
    """True when ``value``, given to a credential's name (``captaindata_api_key = '<value>'``, ``"github_secret":
    "<value>"``, ``token=<value>``), is a credential though typed in sequence: 24 characters or more, letters with
    digits, not a placeholder by its form or words (``placeholder(typed=False)``), not filled by one character
    (``AAAA…``, ``glc_1111…``) nor by runs of one (``5555555dAAAAA7777777…``).

    A typed value beside a word or in a vendor's loose shape stays an example (gitleaks lists those as false
    positives); a value assigned to a key's name is what a memory must not hold, and refusing a typed one costs a
    rephrase, while letting a real one through costs the key (docs/secrets.md, "Typed examples")."""
    lowered = value.lower()
    return (len(value) >= 24 and _LETTER.search(value) is not None and _DIGIT.search(value) is not None
            and not placeholder(value, typed=False) and not _filler(value)
            and sum(len(run.group(0)) for run in _REPEATED.finditer(lowered)) * 2 < len(value))


_HEX_PART = re.compile(r"[0-9a-f]{6,40}")
# A word with a version or a count glued to it, as people write them: utf8, latin1, p95, python3, k8s, ipv6.
_WORD_NUMBER = re.compile(r"[a-z]{1,8}\d{1,3}[a-z]{0,2}")


def _name_like(value: str) -> bool:
    """True when ``value`` is words and numbers joined by ``-``, ``_`` or ``.`` (one word of three letters or
    more at least), with at most one part longer than three characters mixing letters with digits, and that
    one in hex: a name (``project_builds_need_python_3_12``, a CI cache key ``v1-npm-cache-<16 hex>``), not a
    key. Only for names that say key or token: a password may be words and numbers."""
    parts = re.split(r"[-_.]", value)
    if len(parts) < 2 or not all(part.isascii() and part.isalnum() for part in parts):
        return False
    if any(part.isdigit() and len(part) >= 20 for part in parts):
        return False  # no count, date or time (19 digits in nanoseconds) is that long: `pgar_<27 digits>`
    mixed = [part for part in parts if len(part) > 3 and not part.isalpha() and not part.isdigit()
             and not _WORD_NUMBER.fullmatch(part)]
    return (sum(part.isalpha() and len(part) >= 3 for part in parts) >= 1 and len(mixed) <= 1
            and all(_HEX_PART.fullmatch(part) for part in mixed))


def _random(body: str) -> bool:
    """True when ``body`` reads as generated: mixed case and digits with high entropy, or long hex."""
    if re.fullmatch(r"[0-9a-fA-F]{32,}", body):
        return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
    # snake_case or kebab-case words and numbers (a memory file name, a test id) are names, not keys:
    # generated bodies mix letters and digits within one run.
    if _IDENTIFIER.fullmatch(body) or _code_name(body):
        return False
    classes = _classes(body)
    return len(body) >= 16 and classes >= 3 and entropy(body) >= 3.5 or len(body) >= 24 and classes >= 2 and entropy(body) >= 4.0


# --- rules ---------------------------------------------------------------------

# A prefix of 2-12 characters, one or two separators, a random body; hash names are not prefixes.
_PREFIXED = re.compile(r"(?<![\w.+/~@-])([A-Za-z][A-Za-z0-9]{1,11}(?:[_.~-][A-Za-z0-9]{1,10}){0,2}[_.~-]{1,2})"
                       r"([A-Za-z0-9][A-Za-z0-9_\-+/]{15,})")
_HASH_PREFIXES = re.compile(r"(?i)^(?:sha\d*|md5|blake2\w*|sri|uuid|rev|commit|msg|req|toolu|call|chatcmpl|run|thread|asst|file|batch|evt)[_.~-]")
# An AWS key id is found inside any run of upper-case letters and digits of at most 22 characters
# (the id and up to two characters glued to it); lower-case letters and symbols around it do not hide it.
# A longer upper-case run (a constant, a hash in capitals) is not read as a key id.
_AWS_KEY_ID = re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}")
# Formats whose body has no separator from a word: Google refresh and access tokens, Telegram bots, Azure app secrets.
_SHAPED = [
    re.compile(r"(?<![\w/])(1//0[A-Za-z0-9_\-]{40,})"),
    re.compile(r"\b(ya29\.[A-Za-z0-9_\-]{40,})"),
    re.compile(r"\b(\d{8,10}:AA[A-Za-z0-9_\-]{33})"),
    re.compile(r"(?<![\w~.\-])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34})(?![\w~.\-])"),
    re.compile(r"\b([a-f0-9]{32}-us\d{1,2})\b"),
    re.compile(r"\b([a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8})\b"),
    re.compile(r"\b([A-Za-z0-9]{70,}AZDO[A-Za-z0-9]{4})\b"),
    re.compile(r"\b(LTAI[A-Za-z0-9]{12,20})\b"),
    # Bitbucket app passwords: `ATBB` and a body of any length (trufflehog's pattern), with a digit in it
    re.compile(r"\b(ATBB(?=[A-Za-z_=.\-]{0,80}\d)[A-Za-z0-9_=.\-]{20,})\b"),
    re.compile(r"\b([MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38})\b"),
]
# Vendors' published token formats (GitHub's secret-scanning patterns, the vendors' docs), found wherever
# the token ends: betterleaks' rules want a space, a quote or the end of the line after the token, so a
# key closing a sentence (`… dapi<hex>.`) or in parentheses passed. The lookarounds keep a longer run whole.
_EDGE_L, _EDGE_R = r"(?<![A-Za-z0-9_\-])", r"(?![A-Za-z0-9_\-])"
_VENDOR = re.compile(_EDGE_L + "(" + "|".join((
    r"AIza[0-9A-Za-z_\-]{35}",                          # Google API key
    r"EAAA[0-9A-Za-z_\-]{60}",                          # Square access token
    r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}",            # Square legacy token, OAuth secret
    r"SG\.[0-9A-Za-z_\-]{22}\.[0-9A-Za-z_\-]{43}",      # SendGrid
    r"dapi[0-9a-f]{32}(?:-\d)?",                         # Databricks
    r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}",                   # Postman
    r"ATATT3[0-9A-Za-z_\-=]{100,}",                      # Atlassian API token
    r"(?:hf|api_org)_[A-Za-z]{34}",                      # Hugging Face
    r"SK[0-9a-fA-F]{32}",                                # Twilio API key SID
    r"eyJ[0-9A-Za-z_\-]{8,}\.eyJ[0-9A-Za-z_\-]{8,}\.[0-9A-Za-z_\-]{16,}",  # a signed JWT (Supabase, Kubernetes)
    r"da2-[a-z0-9]{26}",                                 # AWS AppSync API key
    r"FlyV1 fm\d+_[A-Za-z0-9+/=,_\-]{100,}",             # Fly.io token
    r"0\.A[\w\-]{50,}\.Ag[\w\-]{250,}",                  # Microsoft Entra ID refresh token
    r"(?:api|sdk|mob)-[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}",  # LaunchDarkly keys
)) + ")" + _EDGE_R)
# A Tableau personal access token's secret: 16 bytes in base64, `:`, 32 letters and digits.
_TABLEAU = re.compile(r"(?<![A-Za-z0-9+/=])([A-Za-z0-9+/]{22}==:[A-Za-z0-9]{32})(?![A-Za-z0-9])")
# An Atlassian Data Center personal access token (Jira, Confluence): 44 base64 characters that decode to a numeric
# id, `:` and random bytes, so it opens with M, N or O (an ASCII digit's first six bits).
_ATLASSIAN_DC = re.compile(r"(?<![A-Za-z0-9+/])([MNO][A-Za-z0-9+/]{43})(?![A-Za-z0-9+/=])")
_ATLASSIAN_DC_ID = re.compile(rb"\d{6,}:")
# A key in a UUID's layout that is no UUID: 8-4-4-4-12 letters and digits, one letter at least past `f`
# (ClickSend's keys, `G9TXU2YD-NOYB-…`); a UUID is hex.
_UUID_LAYOUT = re.compile(_EDGE_L + r"([A-Za-z0-9]{8}-[A-Za-z0-9]{4}-[A-Za-z0-9]{4}-[A-Za-z0-9]{4}-[A-Za-z0-9]{12})"
                          + _EDGE_R)
_NOT_HEX = re.compile(r"[g-zG-Z]")
# A UUID a person marked as not real (`93a51c1d-fake-4673-…`, `…-test-…`): the layout alone is weak evidence.
_MARKED = re.compile(r"(?i)fake|test|dummy|mock|sample")
# A JSON Web Token known by its header (base64url of a JSON object naming its `alg` or `typ`), whatever its
# payload: the `eyJ….eyJ….` rule above wants a JSON payload too.
_JWT = re.compile(_EDGE_L + r"(eyJ[0-9A-Za-z_\-]{10,}={0,2})\.([0-9A-Za-z_\-]{16,}={0,2})\.([0-9A-Za-z_\-]{16,}={0,2})"
                  + _EDGE_R)
# An Azure Storage account key (64 bytes in base64: 86 characters and `==`) after a key's name; a digest of
# the same length names its algorithm (`sha512-…` in a lock file).
_AZURE_STORAGE_KEY = re.compile(r"(?<![A-Za-z0-9+/=\-])([A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])")
_KEY_WORD = re.compile(r"(?i)key")
_DIGEST_NAME = re.compile(r"(?i)(?:sha\d*|md5|blake2\w*|integrity|digest|hash|checksum)\W{0,4}$")
# Microsoft's identifiable secrets carry a signature at a fixed place: `+ACR` in a container registry's password.
_AZURE_ACR = re.compile(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{42}\+ACR[A-Za-z0-9+/]{6})(?![A-Za-z0-9+/])")
# A random value right after a vendor's name (sandman.banks.secret_vendors), credential words and a separator
# between them at most: `liveagent '<32>'`, `mixpanel <32>`, `cloudmersive: "<36>"`, `meraki token = '<40>'`.
# The candidates are found first (few in any text), then the name before each is read back at most 100 characters.
_VENDOR_VALUE = re.compile(r"(?<![\w\-+/=.@])[A-Za-z0-9][A-Za-z0-9_\-]{9,99}(?![\w\-+/=@]|\.\w)")
# Groups: the name, the credential words after it, the separator, a call's `(` right after the name
# (`HubSpotAPI("…")`; not `magicbell (…)` in prose), the quote.
_VENDOR_BEFORE = re.compile(r"(?i)(?<![\w.-])([a-z][\w.-]{3,60}?)((?:[ \t]+(?:api|auth|access|secret|token|key|pat|password))*)"
                            r"(?:[\"']?[ \t]*(:=|=>|[:=|])|(?<=\w)(\())?[ \t]*([\"'`]?)$")
_VENDOR_SUFFIX = re.compile(r"(?:api|auth|access|secret|token|key|pat|password|id)*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _vendor_named(name: str) -> bool:
    """True when the identifier ``name`` names a vendor of secret_vendors: holds a name of six letters or more
    (``X-BillomatApiKey``), or is a shorter name and credential words (``luno``, ``qase_api_key``)."""
    from sandman.banks.secret_vendors import VENDORS

    flat = re.sub(r"[_.\-]", "", name.lower())
    for size in range(4, min(len(flat), 40) + 1):
        for start in range(0, len(flat) - size + 1):
            part = flat[start:start + size]
            if part in VENDORS and (size >= 6 or start == 0 and _VENDOR_SUFFIX.fullmatch(flat[size:])):
                return True
    return False


# What may follow a vendor's name in a key that is the vendor's credential: credential words only (`HubSpotAPI`,
# `railway`, `timezoneapi_token`); not `id` (`ALGOLIA_APP_ID`), nor any other word.
_KEYED_SUFFIX = re.compile(r"(?:api|auth|access|secret|token|key|pat|password|personal)*")
_KEYED_PREFIXES = ("", "x", "get", "my")


def _vendor_keyed(name: str) -> str | None:
    """Return the credential words after the vendor's name when the identifier ``name`` is a vendor's name
    (secret_vendors), perhaps after ``x``, ``get`` or ``my``, and credential words alone (``HubSpotAPI``,
    ``X-BillomatApiKey``, ``railway``); else None."""
    from sandman.banks.secret_vendors import VENDORS

    flat = re.sub(r"[_.\-]", "", name.lower())
    for prefix in _KEYED_PREFIXES:
        if not flat.startswith(prefix):
            continue
        for size in range(4, min(len(flat) - len(prefix), 40) + 1):
            rest = flat[len(prefix) + size:]
            if flat[len(prefix):len(prefix) + size] in VENDORS and _KEYED_SUFFIX.fullmatch(rest):
                return rest
    return None


def _keyed_value(value: str, words: bool) -> bool:
    """True when ``value``, given to a vendor's name as its key (``onesignal: <value>``, ``railway = '<value>'``,
    ``HubSpotAPI("<value>")``), could be that vendor's credential. Looser than ``_vendor_value``, since the key
    says whose credential it is: 16 characters or more, 10 when credential words stand beside the name (``words``:
    the pre-check's keyword pass then reads the text); a UUID (HubSpot's, Heroku's keys) or 32, 40 or 64+ hex
    digits; letters with digits or letters of both cases (the case changing three times or more), at 3.5 bits a
    character or, for a value too short to reach it, ``log2(length) - 1``; a run of 16 digits or more at 2.5 bits
    a character when credential words stand beside the name (``vbout token = '<digits>'``). Never a typed example, an
    object id, a name or CamelCase words."""
    if len(value) < (10 if words else 16) or placeholder(value) or _HASH_PREFIXES.match(value):
        return False
    if _UUID.fullmatch(value):
        return True
    if value.isdigit():
        return words and len(value) >= 16 and entropy(value) >= 2.5
    if re.fullmatch(r"[0-9a-fA-F]+", value) and _LETTER.search(value):
        return len(value) in (32, 40) or len(value) >= 64
    if entropy(value) < _short_gate(value) or _name_like(value) or _code_name(value) and not value.islower():
        return False
    if _IDENTIFIER.fullmatch(value.lower()) and not re.search(r"[a-z]\d|\d[a-z]", value.lower()):
        return False
    letters = value.replace("_", "").replace("-", "")
    if letters.isalpha():
        return sum(a.islower() != b.islower() for a, b in zip(letters, letters[1:])) >= 3
    return _LETTER.search(value) is not None and _DIGIT.search(value) is not None


def _vendor_value(value: str) -> bool:
    """True when ``value`` could be a vendor's key: letters with digits (or letters of both cases drawn at
    random), 3.5 bits per character, not a typed example, an object id (``msg_…``), a UUID, a commit (40 hex),
    a 24-hex object id, or a name (words and numbers joined, CamelCase)."""
    if placeholder(value) or _HASH_PREFIXES.match(value) or _UUID.fullmatch(value) or entropy(value) < 3.5:
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", value):
        return len(value) == 32 or len(value) >= 64
    if _IDENTIFIER.fullmatch(value.lower()) and not re.search(r"[a-z]\d|\d[a-z]", value.lower()) or _code_name(value):
        return False
    return (_LETTER.search(value) is not None and _DIGIT.search(value) is not None and not _name_like(value)
            or _random_letters(value))


# A Twilio account SID names an account; the 32-hex auth token written beside it is the secret.
_TWILIO_SID = re.compile(_EDGE_L + r"AC[0-9a-f]{32}" + _EDGE_R)
_HEX32 = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{32}(?![0-9A-Za-z])")
# A password stated in prose: "the admin password for staging is <value>", "password for root: <value>".
# `pw` is the short form people type ("Jenkins admin pw: …", "db pw is …").
# A password's word in the languages people write memories in, as the rules read it (accents dropped: contraseña is
# `contrasena`): English and Italian password, passphrase, German Passwort and Kennwort, French mot de passe, Spanish
# contraseña, Portuguese senha, Italian parola d'ordine.
_PASSWORD_WORD = (r"(?:pass(?:word|wort|phrase|wd)|kennwort|mot[ \t]+de[ \t]+passe|contrasena|senha"
                  r"|parola[ \t]+d['\u2019]ordine)")
_PROSE_PASSWORD = re.compile(r"(?i)\b(?:" + _PASSWORD_WORD + r"|pwd|pw)\b[^\n.:=]{0,40}?"
                             r"(?:\b(?:is|was|lautet|ist|war|est|etait|es|era|e)\b|:)\s+[\"'`]?(\S+)")
# A password's word and its value with no verb between: "log in with password <value>", "use the password <value>
# for the VPN". The value must look like one (``_password_value``): the word is followed by other words too.
_PASSWORD_THEN_VALUE = re.compile(r"(?i)\b" + _PASSWORD_WORD + r"\b[ \t]+[\"'`]?(\S+)")
# Credentials written `user / password` after a credential word: "Credentials: admin / <value>".
_CREDENTIAL_PAIR = re.compile(r"(?i)\b(?:credentials?|creds|credenciales|credenziali|identifiants|zugangsdaten|login)\b"
                              r"[ \t]*[:=]?[ \t]*[\w.@+-]{1,64}[ \t]*/[ \t]*(\S+)")
# The AWS CLI setting a secret: `aws configure set aws_secret_access_key <value>` (no `=` between).
_AWS_CONFIGURE = re.compile(r"(?i)\baws[ \t]+configure[ \t]+set[ \t]+(?:--profile[ \t]+\S+[ \t]+)?"
                            r"([\w.]*(?:secret|token|password)[\w.]*)[ \t]+[\"']?([^\s\"']+)")
# An AWS secret access key's shape (40 base64 characters) with `aws` and `secret` in the same line near it: "the AWS
# secret for CI is <40>". The shape alone is any 40-character run (a commit, a path); the words say whose key it is.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9+/=])([A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])")
_AWS_WORD = re.compile(r"(?i)(?<![a-z])aws(?![a-z])")
_SECRET_WORD = re.compile(r"(?i)secret")
# A PIN or a PUK stated with its digits: "the phone PIN is <digits>", "SIM PUK: <digits>". The acronym in capitals only:
# a `pin` is also a version pin or a GPIO pin.
_PIN = re.compile(r"\b(?:PIN|PUK)(?:[ \t]+(?:code|number))?\b[^\n.;]{0,30}?(?:\bis\b|:|=)[ \t]*(\d{4,8})(?![\d.,]\d|\w)")


def _password_value(value: str) -> bool:
    """True when ``value``, written right after a password's word with no verb or ``:`` between, looks like a
    password: 8 characters or more, letters with digits or symbols (``credential_like``), not a setting
    (``length=12``), words and numbers joined (``reset-v2``) or a slot a program fills with a call
    (``{g.password()}``, ``shppa_{g(HEX,`` in an f-string)."""
    value = _strip(value)
    return (credential_like(value, 8) and not re.match(r"[A-Za-z_][\w.-]*[=:]", value) and not _name_like(value)
            and not _IDENTIFIER.fullmatch(value.lower()) and not _CALL_SLOT.search(value))


_CALL_SLOT = re.compile(r"\{[A-Za-z_][\w.]*\(")
# A credential in an XML element named for one: `<secret>…</secret>`, `<account_key>…</account_key>`.
_XML_ELEMENT = re.compile(r"(?i)<([\w.:-]{0,40}(?:pass(?:word|wd)?|secret|token|api[_-]?key|access[_-]?key"
                          r"|account[_-]?key|private[_-]?key|credential))>([^<]{6,400})</\1>")
_XML_RUN = re.compile(r"[\w+/=\-.~:]{6,}")
_PRIVATE_KEY = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)?",
                          re.DOTALL)
# A whole envelope holds a key: an envelope around `anything`, or around nothing, is an example.
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{20,}")
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: [0-9a-f]+|\Z)", re.DOTALL)
# scheme://user:password@host: the password runs to the last @ before the host.
_URL_AUTH = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://([^\s:/@'\"`]*):(\S+)@[\w.\-]+")
_URL_QUERY = re.compile(r"(?i)[?&;](?:[\w-]*(?:key|token|secret|sig|signature|password|passwd|auth|credential)s?)=([^&#\s'\"`]+)")
_URL_PATH = re.compile(r"(?i)\bhttps?://[^\s/'\"`]+(/[^\s?#'\"`]*)")
_NAME = (r"(?:pass(?:word|wd|phrase)?|pwd|(?<![a-z])pw|secret|token|credentials?|auth|api[_-]?key|apikey|access[_-]?key"
         r"|private[_-]?key|app[_-]?key|admin[_-]?key|master[_-]?key|encryption[_-]?key|signing[_-]?key"
         r"|client[_-]?secret|key)")
# The name's prefix is bounded: a run such as `keykeykey…` must not be re-read from every `key` in it.
# The name may close a subscript (`os.environ["OPENAI_API_KEY"] = …`, `config['token'] = …`); a quoted value runs to
# its closing quote, `,` and `;` inside it (`'NSPwR0>Q,wTE…'`), whitespace never.
_ASSIGNED = re.compile(r"(?i)(?<![\w-])([\w.-]{0,64}?" + _NAME + r")(?:[\"']\]|[\"'])?"
                       r"(?:[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+|[ \t]+-[ \t]+)('[^'\s]+'|\"[^\"\s]+\"|[^\s,;]+)")
# A name and its value as a call's only two arguments, both quoted: `req.Header.Set("X-Api-Key", "<value>")`,
# `os.setenv("API_TOKEN", "<value>")`. Not a list or a longer call (`["_compare_key", "_defining_class"]`).
_PAIR = re.compile(r"(?i)\([ \t]*[\"']([\w.-]{0,64}?" + _NAME + r")[\"'][ \t]*,[ \t]*(\"[^\"\s]+\"|'[^'\s]+')[ \t]*\)")
# A password's name and a quoted value with only a space between (`pass 'A:J$…'`, Ruby's `password "…"`). Not
# `secret` or `credentials`: `kubectl get secret "tls-cert-v2"` names a Kubernetes secret.
_NAME_QUOTED = re.compile(r"(?i)(?<![\w-])([\w.-]{0,64}?(?:pass(?:word|wd|phrase)?|pwd))"
                          r"[ \t]+(\"[^\"\s]{6,}\"|'[^'\s]{6,}')")
# A table's row, `name | value`: only a generated value (long hex, or mixed case and digits at high entropy), since
# a cell beside `token` may hold a time or a count (sandman's own score.md).
# The name is its whole cell, one to three words before it at most (`apiKey`, `sanity auth token`); under words, not
# a commit or a digest (`| Fix expired token | <40 hex> |` is a change and its commit).
_TABLE_ROW = re.compile(r"(?i)(?:^|\|)[ \t]*((?:[\w.-]{1,30}[ \t]+){0,3}[\w.-]{0,64}?" + _NAME + r")(?:[ \t]+\|[ \t]*|\|[ \t]+)"
                        r"([A-Za-z0-9_\-+/=]{16,})(?=[ \t]*(?:\||$))",
                        re.MULTILINE)
# A function named for a credential that returns a literal: `getBetterStackToken() string { return "<value>" }`,
# `def api_key():\n    return "<value>"`.
_RETURNED = re.compile(r"(?i)(?<![\w-])([\w.-]{0,64}?" + _NAME + r")[ \t]*\([^()\n]{0,40}\)[^{}\n]{0,30}[{:]?"
                       r"\s{0,40}return[ \t]+(\"[^\"\s]+\"|'[^'\s]+')")
# "Set NAME to VALUE" says the same as `NAME=VALUE` ("set HEROKU_API_KEY to <uuid>").
_SET_TO = re.compile(r"(?i)\bset[ \t]+[\"'`]?([\w.-]{0,64}?" + _NAME + r")[\"'`]?[ \t]+to[ \t]+([^\s,;]+)")
# A secret id given a UUID (`secret_id = '<uuid>'`: HashiCorp Vault's AppRole secret, the half of its login that
# is secret). An id under another name (`role_id`, `request_id`) or a secret id that is a path or an ARN (AWS
# Secrets Manager's `SecretId`) is not read.
_SECRET_ID = re.compile(r"(?i)(?<![\w-])(?:[\w.-]{0,64}?[_.-])?secret[_-]?id[\"']?[ \t]*(?::=|=>|[:=])[ \t]*[\"'`]?"
                        r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![\w-])")
_STRONG_NAME = re.compile(r"(?i)pass|pwd|(?<![a-z])pw$|secret|credential|private")
# Names of values that are not secret: a public key, a publishable key, a CSRF token a page embeds, a WebSocket
# handshake's key (`Sec-WebSocket-Key`, a nonce: RFC 6455).
_NOT_SECRET_NAME = re.compile(r"(?i)public|publishable|csrf|xsrf|websocket")
# A `Cookie:` or `Set-Cookie:` header: `name=value` pairs joined by `;`. A value holding a random run of 20 or more
# characters is a session (`session=e4yU…`); `theme=dark`, `_ga=GA1.2.<digits>` are not.
_COOKIE = re.compile(r"(?i)(?<![\w-])(?:set-)?cookie:[ \t]*([^\n]+)")
_COOKIE_PAIR = re.compile(r"([\w.\-]{1,64})=[\"']?([^;\s\"',]+)")
_COOKIE_RUN = re.compile(r"[A-Za-z0-9_\-+/=]{20,}")


def _cookie_random(run: str) -> bool:
    """True when ``run`` (20 characters or more of a cookie's value) reads as a session: generated (``_random``,
    ``_random_letters``), or letters with digits at 3.5 bits per character that are not words and numbers joined
    (a session id in lower case and digits, ``mnou5vh6kxziyb9704eapf…``, which ``_random`` reads as a name)."""
    return (_random(run) or _random_letters(run) or credential_like(run, 20) and entropy(run) >= 3.5
            and not _name_like(run) and not _IDENTIFIER.fullmatch(run.lower()))


_NETRC = re.compile(r"(?i)\blogin\s+\S+\s+password\s+(\S+)")
_PGPASS = re.compile(r"(?m)^[\w.\-*]+:(?:\d+|\*):[\w.\-*]+:[\w.\-*]+:(\S+)$")
_FLAG = re.compile(r"(?i)(?<![\w-])--?(?:[\w-]*(?:password|passwd|passphrase|token|secret|api-?key|auth))(?:[ =])\s*(\S+)")
_MYSQL_P = re.compile(r"(?<![\w-])-p(?=[^\s-])(\S+)")
_MYSQL = re.compile(r"\bmysql(?:dump|admin|sh)?\b|\bmariadb\b")
_SSHPASS = re.compile(r"\bsshpass\s+-p\s*(\S+)")
_CURL_USER = re.compile(r"(?:\s-u|--user)\s*['\"]?([^\s:'\"]+):([^\s'\"]+)")
_LOGIN_P = re.compile(r"\blogin\b[^\n]*?\s(?:-p|--password)\s+(\S+)")
_BASIC = re.compile(r"(?i)\bBasic\s+([A-Za-z0-9+/]{8,}={0,2})")
_BEARER = re.compile(r"(?i)(?:\bBearer|\bAuthorization:\s*token)\s+([A-Za-z0-9._~+/\-]{20,}=*)")
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")
# Its quotes may be escaped, once or twice (`DOCKER_AUTH_CONFIG={\\"auths\\":…}` in a runner's TOML).
_DOCKER_AUTH = re.compile(r"\\*\"auth\\*\"\s*:\s*\\*\"([A-Za-z0-9+/]{8,}={0,2})\\*\"")
# A webhook's URL is its credential (`https://<tenant>.tines.com/webhook/<id>/<secret>`, `hooks.zapier.com/hooks/
# catch/<id>`): in a URL saying `hook`, a path segment of 16 or more letters and digits, mixed, at 3.5 bits a character.
_HOOK_SEGMENT = re.compile(r"[A-Za-z0-9_\-]{16,}")
_HOOK_WORDS = {"hook", "hooks", "webhook", "webhooks"}
_HOOK_HOST = re.compile(r"(?i)https?://(?:web)?hooks?\.")
# A URL's path segment right after one that names keys (`/v1/keys/<key>`, `/tokens/<token>`).
_KEY_SEGMENTS = {"key", "keys", "token", "tokens", "secret", "secrets", "apikey", "apikeys", "api-keys", "api_keys"}


def _hook_segment(segment: str) -> bool:
    return (bool(_HOOK_SEGMENT.fullmatch(segment)) and _LETTER.search(segment) is not None
            and _DIGIT.search(segment) is not None and entropy(segment) >= _short_gate(segment) and not _name_like(segment)
            and not _IDENTIFIER.fullmatch(segment.lower()) and not placeholder(segment) and not _UUID.fullmatch(segment)
            and not _HASH_PREFIXES.match(segment) and not _SANDMAN_ID.fullmatch(segment))


def _key_segment(segment: str) -> bool:
    """True when ``segment`` reads as a key: generated whole, or a prefix and a generated body (``pri_<32 hex>``)."""
    prefixed = _PREFIXED.fullmatch(segment)
    return (_random(segment) or bool(prefixed) and not _HASH_PREFIXES.match(segment) and len(prefixed.group(2)) >= 24
            and _random(prefixed.group(2))) and not placeholder(segment)


def _encoded_words(body: str) -> bool:
    """True when ``body`` is base64 of words joined by ``.``, ``-`` or ``_`` (``bedrock.amazonaws.co``): a
    name encoded, which holds no random part."""
    decoded = _b64text(body)
    return bool(decoded and _WORDS.match(decoded))


# A file name: words, codes and a hash joined by `-` and `_`, followed by an extension
# (`R21A-A-V010SP13RC181024R16900-CN-B_250K-Release-OTA-<32 hex>.bfu`, a firmware image).
_EXTENSION = re.compile(r"\.[a-z0-9]{1,4}(?![\w.])")


def _file_name(body: str, after: str) -> bool:
    """True when ``body``, followed by ``after``, is a file name: an extension follows it and two of its
    ``-``/``_`` parts are words of three letters or more (a random body seldom holds even one)."""
    return bool(_EXTENSION.match(after)) and sum(part.isalpha() and len(part) >= 3
                                                 for part in re.split(r"[-_]", body)) >= 2


_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _names(value: str) -> bool:
    """True when ``value`` is names joined by ``:`` or quotes (``clm74999:AgencyIdentificationCodeContentType``):
    each part words (``Agency``, ``ctx``, ``OTA``) and numbers of at most five digits, one part three words or
    more. Only for names that say key or token. Read by one left-to-right split, no backtracking."""
    parts = [part for part in re.split(r"[:\"'=]+", value) if part]
    words = [_NAME_PART.findall(part) for part in parts]
    return (len(parts) >= 2 and all("".join(found) == part for found, part in zip(words, parts))
            and all(len(word) >= 2 and not word.isdigit() or word.isdigit() and len(word) <= 5
                    for found in words for word in found)
            and any(sum(not word.isdigit() for word in found) >= 3 for found in words))


def _strip(value: str) -> str:
    # A Markdown link's text ends at `](`: in `[no credential is pushed](file.md)` the value is `pushed`.
    value = value.split("](", 1)[0]
    # A quoted value ends at its closing quote: in `{"pass": "p-…"}}` the value is `p-…`.
    if len(value) > 1 and value[0] in _QUOTES and value[0] in value[1:]:
        value = value[1:value.index(value[0], 1)]
    # A quoted value closing a list or a call: `"…-bearer"]`, `"…")`.
    value = re.sub(r"[\"'`][\])}]+$", "", value)
    return value.strip(_QUOTES).rstrip(_SENTENCE_END).strip(_QUOTES)


def _b64text(value: str) -> str | None:
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if text.isprintable() or "\n" in text else None


def findings(text: str) -> Iterator[tuple[str, str]]:
    """Yield ``(kind, value)`` for every secret sandman's rules find in normalised ``text``."""
    for match in _PREFIXED.finditer(text):
        prefix, body = match.groups()
        body = body.rstrip("_-")
        # Object ids (msg_, req_, toolu_, call_, Stripe's cus_ and pi_) are 24 characters or fewer; keys are longer.
        if (not _HASH_PREFIXES.match(prefix) and len(body) >= 26 and _random(body) and not placeholder(body)
                and not _encoded_words(body) and not _file_name(body, text[match.end():match.end() + 6])):
            yield "prefixed-token", match.group(0)
    for match in re.finditer(r"[A-Z0-9]{20,}", text):
        if (len(match.group(0)) <= 22 and _AWS_KEY_ID.search(match.group(0)) and len(set(match.group(0))) > 6
                and not placeholder(match.group(0), typed=False)):
            yield "aws-access-key-id", match.group(0)
    # A vendor's prefix is evidence enough for a long value typed in sequence (`ATBB123abcDEF456…`).
    for pattern in _SHAPED:
        for match in pattern.finditer(text):
            if not placeholder(match.group(1)) or typed_credential(match.group(1)):
                yield "prefixed-token", match.group(1)
    # A vendor's exact format is evidence enough, as betterleaks' rules are: an example typed in sequence
    # (`AIzaSyCjkL9m2nOp4qRsTuVwXyZ…`) is refused too; one character filling it (`AIzaaaaa…`) is not.
    for match in _VENDOR.finditer(text):
        if not placeholder(match.group(1), typed=False) and not _filler(match.group(1)):
            yield "vendor-token", match.group(1)
    for match in _TABLEAU.finditer(text):
        if not placeholder(match.group(1), typed=False) and not _filler(match.group(1)):
            yield "vendor-token", match.group(1)
    for match in _ATLASSIAN_DC.finditer(text):
        try:
            raw = base64.b64decode(match.group(1), validate=True)
        except binascii.Error:
            continue
        if _ATLASSIAN_DC_ID.match(raw):
            yield "vendor-token", match.group(1)
    for match in _UUID_LAYOUT.finditer(text):
        value = match.group(1)
        if (_NOT_HEX.search(value) and _DIGIT.search(value) and entropy(value.replace("-", "")) >= 3.5
                and not placeholder(value) and not _interleaved(value.lower()) and not _name_like(value)
                and not _MARKED.search(value)):
            yield "vendor-token", value
    for match in _JWT.finditer(text):
        header = _b64text(match.group(1).replace("-", "+").replace("_", "/").rstrip("="))
        if header and header.lstrip().startswith("{") and ('"alg"' in header or '"typ"' in header):
            yield "vendor-token", match.group(0)
    for match in _AZURE_STORAGE_KEY.finditer(text):
        before = text[max(0, match.start() - 80):match.start()]
        if _KEY_WORD.search(before) and not _DIGEST_NAME.search(before) and entropy(match.group(1)) >= 5.0:
            yield "azure-storage-key", match.group(1)
    for match in _AZURE_ACR.finditer(text):
        yield "vendor-token", match.group(1)
    for match in _VENDOR_VALUE.finditer(text):
        value = match.group(0)
        loose = len(value) >= 16 and _vendor_value(value)
        if not loose and not _keyed_value(value, True):
            continue
        before = _VENDOR_BEFORE.search(text[max(0, match.start() - 100):match.start()])
        if not before:
            continue
        if loose and _vendor_named(before.group(1)):
            yield "vendor-keyword", value
        elif before.group(3) or before.group(4) or before.group(5):
            # the vendor's name is the value's key: `onesignal: <uuid>`, `parsehub token = '<12>'`
            rest = _vendor_keyed(before.group(1))
            if rest is not None and _keyed_value(value, bool(rest or before.group(2).strip())):
                yield "vendor-keyword", value
    if _TWILIO_SID.search(text):
        for match in _HEX32.finditer(text):
            if _classes(match.group(0)) == 2:
                yield "twilio-auth-token", match.group(0)
    for match in _PROSE_PASSWORD.finditer(text):
        # read as stripped: a Markdown link's text closing on the value (`…is /account/password/reset.](…)`)
        if credential_like(_strip(match.group(1))):
            yield "assigned-credential", _strip(match.group(1))
    for match in _PASSWORD_THEN_VALUE.finditer(text):
        if _password_value(match.group(1)):
            yield "assigned-credential", _strip(match.group(1))
    for match in _CREDENTIAL_PAIR.finditer(text):
        if _password_value(match.group(1)):
            yield "assigned-credential", _strip(match.group(1))
    for match in _AWS_CONFIGURE.finditer(text):
        if credential_like(_strip(match.group(2)), 16):
            yield "assigned-credential", _strip(match.group(2))
    for match in _AWS_SECRET.finditer(text):
        value = match.group(1)
        start, end = text.rfind("\n", 0, match.start()) + 1, text.find("\n", match.end())
        near = text[max(start, match.start() - 100):min(end if end >= 0 else len(text), match.end() + 60)]
        if (_AWS_WORD.search(near) and _SECRET_WORD.search(near) and _classes(value) == 3 and entropy(value) >= 4.0
                and not placeholder(value) and not _code_name(value)):
            yield "aws-secret-access-key", value
    for match in _PIN.finditer(text):
        if not placeholder(match.group(1)):
            yield "assigned-credential", match.group(1)
    for match in _XML_ELEMENT.finditer(text):
        minimum = 6 if _STRONG_NAME.search(match.group(1)) else 12
        for run in _XML_RUN.finditer(match.group(2)):
            if credential_like(run.group(0), minimum) and not _name_like(run.group(0)):
                yield "assigned-credential", run.group(0)
    for match in _PRIVATE_KEY.finditer(text):
        if match.group(0).count("-----") < 4 or _KEY_BODY.search(match.group(0)):
            yield "private-key", match.group(0)
    for match in _PUTTY.finditer(text):
        yield "private-key", match.group(0)
    for match in _URL_AUTH.finditer(text):
        password = match.group(2)
        if not placeholder(password) and not placeholder(password.split("@")[0]):
            yield "url-credentials", password
    for match in _URL_QUERY.finditer(text):
        if credential_like(match.group(1), 16):
            yield "url-credentials", match.group(1)
    for match in _URL_PATH.finditer(text):
        segments = re.split(r"[/:]", match.group(1))
        # after a segment `webhook(s)` or `hook(s)`, or anywhere under a host `hooks.…` / `webhook(s).…`
        hook = _HOOK_HOST.match(match.group(0)) is not None
        for before, segment in zip(["", *segments], segments):
            hook = hook or before.lower() in _HOOK_WORDS
            if (re.fullmatch(r"[A-Za-z0-9_\-]{24,}", segment) and _classes(segment) == 3 and entropy(segment) >= 4.0
                    and not _name_like(segment) and f"/d/{segment}" not in match.group(1)):
                yield "url-credentials", segment
            elif hook and _hook_segment(segment) or before.lower() in _KEY_SEGMENTS and _key_segment(segment):
                yield "url-credentials", segment
    for match in (*_ASSIGNED.finditer(text), *_SET_TO.finditer(text), *_PAIR.finditer(text),
                  *_NAME_QUOTED.finditer(text), *_RETURNED.finditer(text)):
        name, value = match.group(1), _strip(match.group(2).strip())
        if match.re is _RETURNED and len(value) < 16:
            continue  # a returned literal is read from 16 characters, where the pre-check's long run finds it
        if match.re is _NAME_QUOTED and name.lower().endswith("pass") and (
                len(value) < 8 or value.startswith("-") or not _DIGIT.search(value) or not _LETTER.search(value)):
            continue  # `pass` is a verb too: `to pass "--quiet" down`
        strong = _STRONG_NAME.search(name)
        if not strong and _NOT_SECRET_NAME.search(name):
            continue
        # `,` or `;` inside a quoted value: a list or a sentence unless the whole is generated
        if ("," in value or ";" in value) and (_classes(value) < 3 or entropy(value) < 4.0):
            continue
        if credential_like(value, 6 if strong else 12, named=match.re in (_ASSIGNED, _PAIR)) and (
                strong or _random_letters(value) or not _name_like(value) and not _names(value)):
            yield "assigned-credential", value
    for match in _SECRET_ID.finditer(text):
        if not _filler(match.group(1).replace("-", "")):
            yield "assigned-credential", match.group(1)
    for match in _TABLE_ROW.finditer(text):
        name, value = match.group(1), match.group(2)
        if " " in name.strip() and re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", value):
            continue
        if not _NOT_SECRET_NAME.search(name) and _random(value) and not placeholder(value) and not _name_like(value):
            yield "assigned-credential", value
    for match in _COOKIE.finditer(text):
        for name, value in _COOKIE_PAIR.findall(match.group(1)):
            if _NOT_SECRET_NAME.search(name) or placeholder(value):
                continue
            if any(_cookie_random(run) for run in _COOKIE_RUN.findall(value)):
                yield "session-cookie", value
    for pattern in (_NETRC, _PGPASS, _SSHPASS, _LOGIN_P):
        for match in pattern.finditer(text):
            if credential_like(match.group(1)):
                yield "command-line-credential", _strip(match.group(1))
    for match in _FLAG.finditer(text):
        if credential_like(match.group(1)) and not match.group(1).startswith(("-", "$", "\"$")):
            yield "command-line-credential", _strip(match.group(1))
    if _MYSQL.search(text):
        for match in _MYSQL_P.finditer(text):
            if credential_like(match.group(1)):
                yield "command-line-credential", _strip(match.group(1))
    for match in _CURL_USER.finditer(text):
        if credential_like(match.group(2), 4) and not match.group(1).startswith("<"):
            yield "command-line-credential", match.group(2)
    for match in _BASIC.finditer(text):
        decoded = _b64text(match.group(1))
        if decoded and ":" in decoded and not placeholder(decoded.split(":", 1)[1]):
            yield "authorization-header", match.group(1)
    for match in _BEARER.finditer(text):
        if credential_like(match.group(1), 20):
            yield "authorization-header", match.group(1)
    for match in _DOCKER_AUTH.finditer(text):
        decoded = _b64text(match.group(1))
        # `auth` is `user:password` by definition: any password of four characters or more that is not a placeholder
        if decoded and ":" in decoded and len(decoded.split(":", 1)[1]) >= 4 and not placeholder(decoded.split(":", 1)[1]):
            yield "encoded-credential", match.group(1)


class Decoded(tuple):
    """A base64 run of the text and the UTF-8 text it decodes to."""

    __slots__ = ()

    def __new__(cls, run: str, text: str):
        return super().__new__(cls, (run, text))

    run = property(lambda self: self[0])
    text = property(lambda self: self[1])


def decoded_runs(text: str) -> Iterator[Decoded]:
    """Yield each base64 run of 40 characters or more in ``text`` that decodes to printable UTF-8 text."""
    for match in _B64_RUN.finditer(text):
        decoded = _b64text(match.group(0))
        if decoded and len(decoded) >= 16:
            yield Decoded(match.group(0), decoded)
