"""The data-root tree: every path under the memory root is named here and nowhere else.

The tree is the design's (seeds/sandman-design.txt, "Data root"):

    <root>/
    ├── .gitignore                 keeps the dotted tier (and pending-takes/) out of git
    ├── .archive/<host>/<yyyy>/<mm>/<dd>/<HHMMSS>-<relpath>   transcripts at rest (take)
    ├── .dream/<claude project>/<session id>.jsonl            mind transcripts (dream)
    ├── .trace/<verb>-<yyyy-mm-dd>.log                        the journal
    ├── .site/                     the rendered static site (reflect, site)
    ├── .commit.lock               held by commit_memory around every bank write
    ├── .commit.undo               the undo log of the bank transaction in progress
    ├── .git/sandman-index-behind  paths committed without the git index, not yet caught up (INDEX_BEHIND)
    ├── .git/sandman-bank-stat/<bank>.json  a bank folder's stat data at HEAD's tree (BANK_STAT, derived)
    ├── .git/sandman-writing       the sandman process writing git's index or refs now (GIT_WRITER)
    ├── .dream.lock                held by one dream run at a time
    ├── .reflect.lock              held by one reflect pass at a time
    ├── .settings.toml             this machine's settings (sync automation); never versioned
    ├── .search.sqlite             the search index (derived: rebuilt from the banks when missing)
    ├── .search.refresh            touched when a prompt or file hook starts a refresh of a stale index
    ├── .notes/<bank>.json         the note for the next session in a directory (``sandman note``;
    │                              the old ``.handoff/<bank>.json`` is read until a note replaces it)
    ├── .help/<sources>/<page>.txt rendered `--help` pages (derived: typer renders a missing one)
    ├── curation/<set id>/         curators' proposal sets: proposals.json, REPORT.md (versioned)
    ├── .taking/<sid>.<pid>.json   a take between its link and its pointer (take, drain)
    ├── .taking/<sid>.lock         held by the one take of a session from its plan to its take record
    ├── .takes/<sid>.json          what take archived of each session: name, length, SHA-256 (take, forget)
    ├── .started/<sid>.json        sessions started here and the Claude Code pid they run under
    ├── .delivered/<sid>.tsv       the memories each session was given (recall, prompt, file hooks, search)
    ├── .backstop.stamp            touched when a SessionStart starts the backstop
    ├── .backstop.kept             what the backstop's check last found in each project folder (derived)
    ├── .start-replies/<key>.json  a directory's SessionStart reply, kept to be served (derived)
├── .strays/<UTC stamp>/<relpath>  files of no sandman format found in the versioned tier, moved aside
    ├── log/<yyyy-mm-dd>.md, log/INDEX.md                     the voyage log
    ├── trail/<yyyy>/<mm>/<dd>.jsonl                          the trail: one event per line (sandman.machine)
    ├── breath/                    the research store (sandman.machine.breath): sources.toml, weights.json,
    │                              breaths/<id>.json, passes/<id>/{pass.json,prompt.md}, problems.md
    ├── .shift.lock                held by one `shift run` tick or `shift brief` at a time
    ├── shifts/<id>/{brief.md,meta.json,handoff.md,report.md}  a shift's record (versioned)
    ├── shifts/<id>/.session.log   the shift session's output (runtime)
    ├── breath/.run.lock           held by the reading session the runner runs (runtime)
    ├── breath/passes/<id>/.session.log  a reading session's output (runtime)
    ├── shifts/.current.json       the open shift (runtime)
├── shifts/.window.json        the usage window's reset, as a session's limit error named it (runtime)
    ├── shifts/PAUSE               the owner's stop: while it exists `shift run` starts nothing
    ├── .reports-read              the shifts' reports the owner has read (report, report --hook)
    ├── .reports-read.lock         held while a read mark is chosen and written (report, report --hook)
    ├── score/<yyyy>-W<ww>.md, .json, score/<yyyy>-W<ww>-targets.md  the week's score and next week's targets
    ├── score/<yyyy>-W<ww>-voyage.md  the week's voyage entry, written by its rest day
    ├── pending-takes/<sid>.json   takes a live job deferred (machine-local, not versioned)
    └── memories/
        ├── .recent/<sid>.json     pointers: the short-term surface
        └── <bank>/                one directory's memories (docs/BANK-FORMAT.md)

A leading dot marks the tier boundary: dotted paths hold raw bytes and runtime
state and are never versioned; the rest is versioned, one commit per change.

Standard library only: the hook entry points import this module.
"""

from __future__ import annotations

from collections import namedtuple
from datetime import datetime
from pathlib import Path

# Lines every root's .gitignore carries (store.repo keeps them present).
GITIGNORE_LINES = (
    "# sandman: the dotted tier holds raw bytes and runtime state; it is never versioned.",
    ".*",
    "!/.gitignore",
    "# pending takes name jobs of this machine only; they must not travel with git.",
    "/pending-takes/",
)
# The rules by which a repository is known as a memory root (store.repo.ensure_root
# adopts no other repository with history): every root's .gitignore has had them
# since the first version.
GITIGNORE_SIGNATURE = (".*", "!/.gitignore")
# In the root's git directory (``.git/``, never versioned): the repo-relative paths committed
# without the git index (a remember's flat commit, store.repo.commit_flat), one a line, appended
# before HEAD moves; the next writer that uses the index sets their entries to HEAD's and removes
# it (store.repo.catch_up_index). docs/BANK-FORMAT.md, "The index behind HEAD".
INDEX_BEHIND = "sandman-index-behind"
# In the root's git directory: ``<BANK_STAT>/<bank>.json``, the stat data of a bank folder's files
# when it last held exactly HEAD's tree there (store.repo.is_clean), so a remember's check of its
# bank reads one lstat per file, not each file whole. Derived. docs/BANK-FORMAT.md, "The bank's stat record".
BANK_STAT = "sandman-bank-stat"
# In the root's git directory: the sandman process writing git's index or refs right now (JSON
# ``{"pid", "start"}``), written before and removed after; a git lock file is a killed sandman's, and
# removed, only while this names a dead process (store.repo). docs/BANK-FORMAT.md, "Git's lock files".
GIT_WRITER = "sandman-writing"


# The records on the hook paths are namedtuples or plain classes, not dataclasses:
# importing dataclasses (and the inspect module it pulls in) cost each hook start
# about 9 ms, and collections is loaded by the interpreter's own start-up anyway.
class Layout(namedtuple("Layout", "root")):
    """The paths of one memory root; ``root`` (a Path) is absolute."""

    __slots__ = ()

    # -- the hidden tier --
    @property
    def archive(self) -> Path:
        return self.root / ".archive"

    def archive_host(self, host: str) -> Path:
        """``.archive/<host>``: ``claude`` or ``codex``."""
        return self.archive / host

    def archive_path(self, host: str, taken: datetime, relpath: str) -> Path:
        """``.archive/<host>/<yyyy>/<mm>/<dd>/<HHMMSS>-<relpath>`` for a take at ``taken`` (UTC).

        ``relpath`` is the transcript's path relative to the host's sessions folder,
        POSIX separators; the time prefix goes on its first component.
        """
        day = self.archive_host(host) / f"{taken:%Y}" / f"{taken:%m}" / f"{taken:%d}"
        return day / f"{taken:%H%M%S}-{relpath}"

    @property
    def dream_dir(self) -> Path:
        """``.dream/``: the minds' working directory and their kept transcripts."""
        return self.root / ".dream"

    def mind_transcript(self, claude_project: str, session_id: str) -> Path:
        return self.dream_dir / claude_project / f"{session_id}.jsonl"

    def dream_orphan(self, name: str) -> Path:
        """``.dream/orphans/<name>``: where a mind transcript (or its companion folder) that a
        killed dream left in Claude Code's projects folder is moved by the next dream run."""
        return self.dream_dir / "orphans" / name

    # -- forget's contract with dream (issue 3) --
    def dream_manifest(self, dreamt_session: str) -> Path:
        """``.dream/by-session/<dreamt session id>.json``: the mind transcripts kept for one
        dreamt session, ``{"session": id, "transcripts": [paths relative to the root]}``
        (docs/BANK-FORMAT.md, "Mind transcripts"). forget deletes what it lists."""
        return self.dream_dir / "by-session" / f"{dreamt_session}.json"

    @property
    def trace(self) -> Path:
        return self.root / ".trace"

    def trace_file(self, verb: str, day: str) -> Path:
        """``.trace/<verb>-<yyyy-mm-dd>.log`` (``day`` is the UTC date)."""
        return self.trace / f"{verb}-{day}.log"

    def trace_files(self, day: str) -> list[Path]:
        """Every verb's journal file of one UTC day (dream's budget sums their costs), sorted."""
        return sorted(self.trace.glob(f"*-{day}.log"))

    @property
    def site(self) -> Path:
        return self.root / ".site"

    # -- derived caches of the fast paths --
    @property
    def recall_caches(self) -> Path:
        """``.recall/``: each bank's recall head, derived from its MEMORY.md (banks/listing.py)."""
        return self.root / ".recall"

    def recall_cache(self, bank_name: str) -> Path:
        """``.recall/<bank>.json``: the first MEMORY.md lines of a bank and its count of lines."""
        return self.recall_caches / f"{bank_name}.json"

    @property
    def start_replies(self) -> Path:
        """``.start-replies/``: SessionStart replies kept to be served (sandman/recall/served.py)."""
        return self.root / ".start-replies"

    def start_reply(self, key: str) -> Path:
        """``.start-replies/<key>.json``: the reply of one cwd, ``key`` its served.key."""
        return self.start_replies / f"{key}.json"

    # -- the site's own state (sandman.site): caches and the manifest, never served --
    @property
    def site_state(self) -> Path:
        """``.site/.state/``: what the last render knew; deleting it forces a full render."""
        return self.site / ".state"

    @property
    def site_manifest(self) -> Path:
        """``.site/.state/manifest.json``: each written page and the digest of its inputs."""
        return self.site_state / "manifest.json"

    @property
    def site_sources_cache(self) -> Path:
        """``.site/.state/sources/``: parsed memories and entries, keyed by file SHA-256, one file
        per part of the root (a bank, the log): a render rewrites only the parts that changed."""
        return self.site_state / "sources"

    def site_sources_part(self, part: str) -> Path:
        """``.site/.state/sources/<first 32 hex digits of SHA-256(part)>.marshal``: one part
        (``memories/<bank>``, ``log``) of the parse cache; hashed, so any bank name makes a short file name."""
        import hashlib

        digest = hashlib.sha256(part.encode("utf-8", "surrogateescape")).hexdigest()
        return self.site_sources_cache / f"{digest[:32]}.marshal"

    @property
    def site_sources_cache_v1(self) -> Path:
        """``.site/.state/sources.marshal``: the parse cache in one file, as sandman before the
        parts wrote it; removed by the next render."""
        return self.site_state / "sources.marshal"

    @property
    def site_history_cache(self) -> Path:
        """``.site/.state/history.marshal``: the commits that touched each path, as of one HEAD."""
        return self.site_state / "history.marshal"

    @property
    def site_search_cache(self) -> Path:
        """``.site/.state/search/``: each bank's part of ``search-index.js``, with the digest of
        the bank's inputs it was made from, one file per bank (site_search_part)."""
        return self.site_state / "search"

    def site_search_part(self, family: str) -> Path:
        """``.site/.state/search/<first 32 hex digits of SHA-256(family)>.marshal``: one bank's
        (``bank:<name>``) part of the search index."""
        import hashlib

        digest = hashlib.sha256(family.encode("utf-8", "surrogateescape")).hexdigest()
        return self.site_search_cache / f"{digest[:32]}.marshal"

    @property
    def site_search_cache_v1(self) -> Path:
        """``.site/.state/search.marshal``: the search parts in one file, as sandman before
        the parts wrote it; removed by the next render."""
        return self.site_state / "search.marshal"

    @property
    def site_templates_cache(self) -> Path:
        """``.site/.state/templates/``: jinja2's compiled templates (``<key>.cache``), keyed
        by each template's name and checked against its source."""
        return self.site_state / "templates"

    @property
    def site_trail_cache(self) -> Path:
        """``.site/.state/trail.marshal``: each trail day file's events as last read, keyed by its identity."""
        return self.site_state / "trail.marshal"

    @property
    def site_lock(self) -> Path:
        """``.site/.state/render.lock``: one render writes ``.site/`` at a time."""
        return self.site_state / "render.lock"

    @property
    def commit_lock(self) -> Path:
        return self.root / ".commit.lock"

    @property
    def dream_lock(self) -> Path:
        return self.root / ".dream.lock"

    # -- crash recovery (issue 8, hardening) --
    @property
    def commit_undo(self) -> Path:
        """``.commit.undo``: how to undo the bank transaction in progress, should its process die."""
        return self.root / ".commit.undo"

    @property
    def settings_file(self) -> Path:
        """``.settings.toml``: this machine's settings; dotted, so it never travels with git."""
        return self.root / ".settings.toml"

    @property
    def help_cache(self) -> Path:
        """``.help/``: rendered ``--help`` pages, one folder per state of the code (sandman.dispatch); derived."""
        return self.root / ".help"

    # -- search, notes and curation (issue 19) --
    @property
    def search_index(self) -> Path:
        """``.search.sqlite``: the FTS5 index of every live memory (sandman.banks.search); derived."""
        return self.root / ".search.sqlite"

    @property
    def search_index_lock(self) -> Path:
        """``.search.sqlite.lock``: held (flock) by whoever writes or replaces the index, so a
        rebuild never replaces the file under another writer's journal; empty, derived."""
        return self.root / ".search.sqlite.lock"

    @property
    def search_refresh_stamp(self) -> Path:
        """``.search.refresh``: its mtime is when a prompt or file hook last started a refresh of the index."""
        return self.root / ".search.refresh"

    @property
    def notes(self) -> Path:
        """``.notes/``: the notes of this machine for each directory's next session, one per bank (sandman.note)."""
        return self.root / ".notes"

    def note(self, bank_name: str) -> Path:
        """``.notes/<bank>.json``: the note ``sandman note`` left for a directory's next session."""
        return self.notes / f"{bank_name}.json"

    def old_handoff_note(self, bank_name: str) -> Path:
        """``.handoff/<bank>.json``: where a note was kept before issue 33 (``sandman handoff``); read
        until a new note replaces it, then removed (sandman.note)."""
        return self.root / ".handoff" / f"{bank_name}.json"

    @property
    def curation(self) -> Path:
        """``curation/``: the curators' proposal sets (versioned)."""
        return self.root / "curation"

    def proposal_set(self, set_id: str) -> Path:
        """``curation/<set id>/``: ``proposals.json`` and ``REPORT.md`` of one curator run."""
        return self.curation / set_id

    # -- takes in progress (a take killed between its move and its pointer is finished by a drain) --
    @property
    def taking(self) -> Path:
        """``.taking/``: the intent records of takes in progress (docs/BANK-FORMAT.md, "Takes in progress")."""
        return self.root / ".taking"

    def take_intent(self, session_id: str, pid: int) -> Path:
        """``.taking/<sid>.<pid>.json``: what the take of ``session_id`` by process ``pid`` is moving, and where."""
        return self.taking / f"{session_id}.{pid}.json"

    def take_lock(self, session_id: str) -> Path:
        """``.taking/<sid>.lock``: held (flock, store/runlock.py ``held``) by the take of ``session_id``
        from planning its part to writing its take record, and by a drain finishing a killed take of
        it; there only while held (docs/BANK-FORMAT.md, "Takes in progress")."""
        return self.taking / f"{session_id}.lock"

    @property
    def takes(self) -> Path:
        """``.takes/``: one take record per session taken (docs/BANK-FORMAT.md, "Take records")."""
        return self.root / ".takes"

    def take_record(self, session_id: str) -> Path:
        """``.takes/<sid>.json``: the archived name, length and SHA-256 of the session's last take."""
        return self.takes / f"{session_id}.json"

    # -- the backstop for missed endings (sandman/verbs/take_missed.py) --
    @property
    def started(self) -> Path:
        """``.started/``: one record per session whose SessionStart ran here (BANK-FORMAT "Started sessions")."""
        return self.root / ".started"

    def started_record(self, session_id: str) -> Path:
        """``.started/<sid>.json``: ``{"pid": <Claude Code pid>, "at": <ISO time>}``."""
        return self.started / f"{session_id}.json"

    # -- which memories reached which session (sandman/recall/ledger.py) --
    @property
    def delivered(self) -> Path:
        """``.delivered/``: one ledger per session of the memories it was given (BANK-FORMAT "Deliveries")."""
        return self.root / ".delivered"

    def delivered_ledger(self, session_id: str) -> Path:
        """``.delivered/<sid>.tsv``: ``<time>\\t<channel>\\t<bank>/<file>`` lines, appended."""
        return self.delivered / f"{session_id}.tsv"

    @property
    def backstop_stamp(self) -> Path:
        """``.backstop.stamp``: its mtime is when a SessionStart last started the backstop."""
        return self.root / ".backstop.stamp"

    @property
    def backstop_kept(self) -> Path:
        """``.backstop.kept``: what the backstop's check last found in each project folder
        (BANK-FORMAT "Started sessions")."""
        return self.root / ".backstop.kept"

    @property
    def strays(self) -> Path:
        """``.strays/``: files found in the versioned tier that are none of sandman's formats
        (``owns``), moved aside by the single writer instead of committed; doctor names them."""
        return self.root / ".strays"

    def stray(self, moved: datetime, relpath: str) -> Path:
        """``.strays/<UTC yyyymmddTHHMMSSZ>/<relpath>``: where a stranger found at ``moved`` goes."""
        return self.strays / f"{moved:%Y%m%dT%H%M%SZ}" / relpath

    # -- the versioned tier --
    @property
    def gitignore(self) -> Path:
        return self.root / ".gitignore"

    @property
    def memories(self) -> Path:
        return self.root / "memories"

    @property
    def recent(self) -> Path:
        """``memories/.recent/``: one pointer per taken session."""
        return self.memories / ".recent"

    def pointer(self, session_id: str) -> Path:
        return self.recent / f"{session_id}.json"

    def bank(self, bank_name: str) -> Path:
        """``memories/<bank>/``; ``bank_name`` comes from banks.names.bank_name()."""
        return self.memories / bank_name

    @property
    def log(self) -> Path:
        return self.root / "log"

    def log_entry(self, day: str) -> Path:
        """``log/<yyyy-mm-dd>.md``: the voyage entry of one UTC day."""
        return self.log / f"{day}.md"

    @property
    def log_index(self) -> Path:
        return self.log / "INDEX.md"

    @property
    def pending_takes(self) -> Path:
        return self.root / "pending-takes"

    def pending_take(self, session_id: str) -> Path:
        return self.pending_takes / f"{session_id}.json"

    # -- shifts (sandman.machine.shift, docs/BANK-FORMAT.md § shifts) --
    @property
    def shifts(self) -> Path:
        return self.root / "shifts"

    def shift_dir(self, shift_id: str) -> Path:
        return self.shifts / shift_id

    @property
    def shift_current(self) -> Path:
        """``shifts/.current.json``: the open shift (runtime, never versioned)."""
        return self.shifts / ".current.json"

    @property
    def shift_window(self) -> Path:
        """``shifts/.window.json``: the usage window as sandman last learnt it from a session's
        limit error, ``{resets_at, used_percentage, source, at}`` (runtime; read by the clock
        when no ``[machine] window_file`` is set)."""
        return self.shifts / ".window.json"

    @property
    def shift_checks(self) -> Path:
        """``shifts/.checks.json``: the last result of ``[machine] check`` in each repository,
        ``{repository: {command, head, exit, at, line}}`` (runtime; ``shift pick`` reruns a
        check when the command or the repository's HEAD changed, or after a day)."""
        return self.shifts / ".checks.json"

    @property
    def reports_read(self) -> Path:
        """``.reports-read``: which shifts' reports the owner has read (runtime, never versioned)."""
        return self.root / ".reports-read"

    @property
    def reports_read_lock(self) -> Path:
        """``.reports-read.lock``: held around reading, choosing and writing read marks (runtime)."""
        return self.root / ".reports-read.lock"

    @property
    def shift_pause(self) -> Path:
        return self.shifts / "PAUSE"

    @property
    def shift_lock(self) -> Path:
        return self.root / ".shift.lock"

    @property
    def score(self) -> Path:
        return self.root / "score"

    def week_targets(self, week: str) -> Path:
        """``score/<yyyy>-W<ww>-targets.md``: the rest day's plan for ``week``."""
        return self.score / f"{week}-targets.md"

    def week_voyage(self, week: str) -> Path:
        """``score/<yyyy>-W<ww>-voyage.md``: the week's voyage entry, written by its rest day."""
        return self.score / f"{week}-voyage.md"

    def week_score(self, week: str) -> Path:
        """``score/<yyyy>-W<ww>.md``: the week's score page (sandman.machine.score)."""
        return self.score / f"{week}.md"

    def week_score_json(self, week: str) -> Path:
        """``score/<yyyy>-W<ww>.json``: the same numbers, for the site's charts."""
        return self.score / f"{week}.json"

    # -- the trail (sandman.machine.trail, docs/BANK-FORMAT.md § trail) --
    @property
    def trail(self) -> Path:
        return self.root / "trail"

    def trail_day(self, day: str) -> Path:
        """``trail/<yyyy>/<mm>/<dd>.jsonl`` of one UTC day (``day`` is ``YYYY-MM-DD``)."""
        year, month, date = day.split("-")
        return self.trail / year / month / f"{date}.jsonl"

    def trail_days(self) -> list[Path]:
        """Every day file of the trail, oldest first (the path order is the date order)."""
        if not self.trail.is_dir():
            return []
        return sorted(self.trail.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9].jsonl"))

    # -- the breath store (sandman.machine.breath, docs/BANK-FORMAT.md § breath) --
    @property
    def breath(self) -> Path:
        return self.root / "breath"

    @property
    def breath_sources(self) -> Path:
        """``breath/sources.toml``: the feeds, written by the owner (``breathe init`` writes an example)."""
        return self.breath / "sources.toml"

    @property
    def breath_weights(self) -> Path:
        """``breath/weights.json``: each source's current weight and clocks, and when reweight last ran."""
        return self.breath / "weights.json"

    @property
    def breath_breaths(self) -> Path:
        return self.breath / "breaths"

    def breath_record(self, breath_id: str) -> Path:
        """``breath/breaths/<id>.json``: one breath."""
        return self.breath_breaths / f"{breath_id}.json"

    @property
    def breath_passes(self) -> Path:
        return self.breath / "passes"

    def breath_pass(self, pass_id: str) -> Path:
        """``breath/passes/<id>/``: a pass's ``pass.json`` and ``prompt.md``."""
        return self.breath_passes / pass_id

    @property
    def breath_run_lock(self) -> Path:
        """``breath/.run.lock``: held by the one reading session the runner runs (runtime, never versioned)."""
        return self.breath / ".run.lock"

    def breath_session_log(self, pass_id: str) -> Path:
        """``breath/passes/<id>/.session.log``: what the pass's reading session printed (runtime)."""
        return self.breath_pass(pass_id) / ".session.log"

    @property
    def breath_problems(self) -> Path:
        """``breath/problems.md``: open problems, written by ``shift brief``; ``breathe pass`` reads it."""
        return self.breath / "problems.md"

    # -- reflect (issue 6) --
    @property
    def reflect_lock(self) -> Path:
        """``.reflect.lock``: held by the one running reflect pass."""
        return self.root / ".reflect.lock"

    def sweeping_pointer(self, session_id: str) -> Path:
        """``memories/.recent/.<sid>.json.sweeping``: a pointer reflect's sweep moved aside to re-read
        before deleting it (dotted, so no reader lists it)."""
        return self.recent / f".{session_id}.json.sweeping"


# The formats the single writer owns in the versioned tier (docs/BANK-FORMAT.md, "Strays"):
# a new file matching none of them is never committed; commit's recovery moves it into
# ``.strays/``. Relative POSIX paths, matched whole.
OWNED_FORMATS = (
    r"\.gitignore",
    r"memories/[^/.][^/]*/[^/]+\.md",  # memories and the bank's MEMORY.md
    r"memories/[^/.][^/]*/_archive/[^/]+\.md",
    r"memories/[^/.][^/]*/_reflect\.json",
    r"log/\d{4}-\d{2}-\d{2}\.md", r"log/INDEX\.md",
    r"trail/\d{4}/\d{2}/\d{2}\.jsonl",
    r"shifts/s-[0-9TZ]+/(?:brief\.md|meta\.json|handoff\.md|report\.md)", r"shifts/PAUSE",
    r"score/\d{4}-W\d{2}(?:-targets|-voyage)?\.md", r"score/\d{4}-W\d{2}\.json",
    r"breath/(?:sources\.toml|weights\.json|problems\.md)", r"breath/breaths/[^/]+\.json",
    r"breath/passes/[^/]+/(?:pass\.json|prompt\.md)",
    r"curation/[^/]+/(?:proposals\.json|REPORT\.md)", r"curation/retired\.jsonl",
)
_OWNED = None


def owns(relpath: str) -> bool:
    """True when ``relpath`` (relative to the root, POSIX) is one of the formats sandman writes."""
    global _OWNED
    if _OWNED is None:
        import re

        _OWNED = re.compile("|".join(f"(?:{pattern})" for pattern in OWNED_FORMATS))
    return _OWNED.fullmatch(relpath) is not None


# Names of files and folders inside a bank (docs/BANK-FORMAT.md).
BANK_INDEX = "MEMORY.md"
BANK_ARCHIVE = "_archive"
BANK_REFLECT = "_reflect.json"


def resource(kind: str) -> Path:
    """Return the folder of packaged resources: ``templates``, ``site`` or ``prompts``.

    An installed wheel carries them in ``sandman/_data/<kind>``; a source
    checkout (or an editable install) has them at the top of the repository.
    Raises FileNotFoundError naming both places when neither exists.
    """
    package = Path(__file__).resolve().parent
    for candidate in (package / "_data" / kind, package.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"sandman's {kind}/ folder is missing from {package}; reinstall sandman")
