"""The shift's tool-call guard: a ``PreToolUse`` hook that refuses what a shift must never do
(docs/shift.md, "The guard"; docs/BANK-FORMAT.md § trail, ``guard.deny``).

Claude Code runs ``<python> -m sandman.machine.guard --hook --root ROOT --shift ID || exit 2``
before every tool call of a shift session (the profile's ``hooks.PreToolUse``, machine.profile),
the call's JSON on stdin (``tool_name``, ``tool_input``, ``cwd``). An allowed call prints nothing
and exits 0; a refused one prints ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
"permissionDecision": "deny", "permissionDecisionReason": …}}``, exits 0, and appends a
``guard.deny`` event to the trail (``data``: ``tool``, ``rule``, ``input``, at most 2,000
characters of the call). It fails closed: a payload it cannot read, a command it cannot parse, or
any error of its own is a deny; a crash before it can answer exits non-zero, and the ``|| exit 2``
makes that a block too (exit 2 blocks a tool call in Claude Code).

Bash commands are parsed, never matched by prefix: ``shlex`` splits the words, each simple
command is cut at ``;``, ``&&``, ``||``, ``|``, ``&``, newlines and parentheses, ``$(…)`` and
backquotes are read as commands of their own, ``sh -c``/``bash -c``/``eval`` read their string,
and wrappers (``env X=1``, ``command``, ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``,
``xargs``, ``sudo``, an absolute path such as ``/usr/bin/git``) are looked through. git's global
options (``-C DIR``, ``-c k=v``, ``--git-dir`` …) are read, ``cd``/``pushd`` move the directory a
later command runs in (its relative paths resolve there; in the memory root only readers, ``sandman``
and git's own rules run), an interpreter reading its code from stdin (``| python3 -``) is refused
like a shell without ``-c``, and an unknown git subcommand (an alias) is refused.

Stdlib and machine.owner (stdlib and sandman.errors) only at import, so a call costs one short
Python start; the trail is imported on a deny.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sandman.machine.owner import OWNER_KINDS

RULE_MAX_INPUT_CHARS = 2_000  # what of a refused call the guard.deny event keeps
GUARD_KIND = "guard.deny"

CI_PATTERNS = (
    re.compile(r"(^|/)\.github/workflows(/|$)"), re.compile(r"(^|/)\.github/actions(/|$)"),
    re.compile(r"(^|/)\.gitlab-ci\.ya?ml$"), re.compile(r"(^|/)\.gitlab/ci(/|$)"),
    re.compile(r"(^|/)\.ci(/|$)"), re.compile(r"(^|/)\.circleci(/|$)"), re.compile(r"(^|/)\.buildkite(/|$)"),
    re.compile(r"(^|/)\.travis\.ya?ml$"), re.compile(r"(^|/)azure-pipelines\.ya?ml$"),
    re.compile(r"(^|/)bitbucket-pipelines\.ya?ml$"), re.compile(r"(^|/)Jenkinsfile$"),
    re.compile(r"(^|/)\.woodpecker(/|\.ya?ml$)"), re.compile(r"(^|/)\.drone\.ya?ml$"),
)

WRITE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish")
SCRIPTERS = ("python", "python3", "python2", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "tclsh")
# Commands that only read: a path of the memory root or a CI file among their words is fine.
READERS = ("cat", "less", "more", "head", "tail", "grep", "egrep", "fgrep", "rg", "ls", "wc", "stat", "file",
           "diff", "jq", "echo", "printf", "test", "[", "realpath", "readlink", "basename", "dirname", "true",
           "false", "sort", "uniq", "cut", "tr", "column", "nl", "od", "xxd", "sha256sum", "md5sum", "cd",
           "pushd", "popd", "pwd", "which", "type")
WRAPPERS = ("command", "exec", "nohup", "builtin", "time", "nice", "ionice", "stdbuf", "setsid", "chronic",
            "unbuffer", "doas", "sudo", "timeout", "xargs", "env", "flock", "caffeinate", "watch", "strace")
# git subcommands a shift may run (anything else, an alias included, is refused)
GIT_READ = {"blame", "annotate", "cat-file", "check-ignore", "check-attr", "cherry", "describe", "diff",
            "diff-files", "diff-index", "diff-tree", "for-each-ref", "format-patch", "grep", "help", "log",
            "ls-files", "ls-remote", "ls-tree", "merge-base", "name-rev", "rev-list", "rev-parse", "shortlog",
            "show", "show-branch", "show-ref", "status", "var", "version", "whatchanged", "count-objects",
            "fsck", "bisect", "fetch", "reflog", "config", "stripspace", "hash-object", "range-diff"}
GIT_WRITE = {"add", "rm", "mv", "commit", "revert", "cherry-pick", "merge", "apply", "am", "tag", "branch",
             "notes", "restore", "push", "gc", "prune", "repack", "maintenance", "submodule", "mergetool",
             "difftool", "archive", "bundle", "init", "clone", "pull", "sparse-checkout", "lfs"}
GIT_NEVER = {
    "stash": "git stash hides work from the branch and the report",
    "clean": "git clean deletes untracked files for good",
    "reset": "git reset moves a branch or discards work",
    "checkout": "git checkout switches branches or discards work (`checkout --`); the shift stays on its branch",
    "switch": "git switch leaves the shift's branch",
    "rebase": "git rebase rewrites history",
    "filter-branch": "git filter-branch rewrites history", "filter-repo": "git filter-repo rewrites history",
    "replace": "git replace rewrites what history says", "update-ref": "git update-ref moves a ref by hand",
    "symbolic-ref": "git symbolic-ref moves HEAD by hand", "worktree": "git worktree changes the worktrees",
    "commit-tree": "git commit-tree writes commits behind the branch's back",
}
GIT_OPTS_WITH_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix",
                       "--config-env", "--list-cmds", "--attr-source"}
TRUNK_NAMES = ("main", "master", "trunk", "develop", "default")


class Refused(Exception):
    """A tool call the guard refuses: ``rule`` (a short name) and ``reason`` (for the model)."""

    def __init__(self, rule: str, reason: str):
        super().__init__(reason)
        self.rule, self.reason = rule, reason


@dataclass
class Context:
    """What the guard knows of the shift: the memory root, the shift id, the repository's main
    checkout (``repo``), the worktree the session works in (None: the rest day), the trunk."""

    root: Path
    shift: str | None = None
    repo: Path | None = None
    worktree: Path | None = None
    trunk: str | None = None
    branch: str | None = None
    home: Path = field(default_factory=Path.home)


def load_context(root: Path, shift: str | None) -> Context:
    """The shift's facts from ``shifts/<id>/meta.json`` (stdlib only). A missing meta leaves them None."""
    context = Context(root=root.resolve(), shift=shift)
    if not shift or not re.fullmatch(r"s-\d{8}T\d{4}(\d{2})?Z", shift):
        return context
    try:
        meta = json.loads((root / "shifts" / shift / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return context
    if isinstance(meta, dict) and isinstance(meta.get("repo"), str) and not meta.get("rest"):
        context.repo = Path(meta["repo"]).resolve()
        worktree = meta.get("worktree") or str(Path(meta["repo"]) / ".claude" / "worktrees" / shift)
        context.worktree = Path(worktree).resolve()
        context.trunk = meta.get("trunk") if isinstance(meta.get("trunk"), str) else None
        context.branch = meta.get("branch") if isinstance(meta.get("branch"), str) else None
    return context


# --- paths -------------------------------------------------------------------------------------


def _within(path: Path, folder: Path | None) -> bool:
    if folder is None:
        return False
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def _expand(word: str, context: Context, cwd: Path, env: dict[str, str]) -> Path:
    """A word read as a path: ``~``, ``$HOME``, ``$SANDMAN_ROOT``, ``$PWD`` expanded, relative to ``cwd``."""
    values = {"HOME": str(context.home), "SANDMAN_ROOT": str(context.root), "PWD": str(cwd), **env}
    text = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: values.get(m.group(1), m.group(0)), word)
    if text.startswith("~"):
        text = str(context.home) + text[1:]
    path = Path(text)
    if not path.is_absolute():
        path = cwd / path
    return Path(os.path.normpath(path))


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def is_ci_path(path: str) -> bool:
    """True for a CI definition (.github/workflows, .gitlab-ci.yml, .ci/, .circleci/ …)."""
    text = path.replace("\\", "/")
    return any(pattern.search(text) for pattern in CI_PATTERNS)


def check_write_path(context: Context, target: Path, via: str) -> None:
    """Refuse a write to ``target``: a CI file, anything in the memory root (sandman's verbs write it,
    never a tool), the main checkout, or outside the worktree."""
    target = _resolved(target)
    if is_ci_path(str(target)):
        raise Refused("ci-file", f"{via} would change a CI file ({target}); CI definitions are the owner's")
    if _within(target, context.root):
        raise Refused("memory-root", f"{via} would write {target} in the memory root; only sandman's own "
                      "verbs write there (the trail, the banks), never a tool or a shell")
    if context.worktree is not None and not _within(target, context.worktree):
        if context.repo is not None and _within(target, context.repo):
            raise Refused("main-checkout", f"{via} would write {target} in the main checkout {context.repo}; "
                          f"work in the shift's worktree {context.worktree}")
        raise Refused("outside-worktree", f"{via} would write {target}, outside the shift's worktree "
                          f"{context.worktree}")


# --- the shell ---------------------------------------------------------------------------------


def _substitutions(text: str) -> list[str]:
    """The bodies of every ``$(…)``, ``<(…)``, ``>(…)`` and backquoted command in ``text`` (quotes
    aside: over-reading only refuses more)."""
    found = []
    n = 0
    while n < len(text):
        if text[n] in "$<>" and text[n + 1:n + 2] == "(" and text[n + 2:n + 3] != "(":
            depth, start, n = 1, n + 2, n + 2
            while n < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[n], 0)
                n += 1
            found.append(text[start:n - 1] if depth == 0 else text[start:])
            continue
        if text[n] == "`":
            end = text.find("`", n + 1)
            found.append(text[n + 1:] if end < 0 else text[n + 1:end])
            n = len(text) if end < 0 else end + 1
            continue
        n += 1
    return found


SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")", "|&", ";;", "{", "}", "!"}
REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<>", "1>", "2>", ">&"}


def split_commands(text: str) -> list[tuple[list[str], list[str]]]:
    """``text`` as simple commands: ``[(words, redirect targets)]``. Raises Refused (rule ``parse``)
    for a command shlex cannot read (an open quote)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError as error:
        raise Refused("parse", f"the guard cannot parse this command ({error}); write it plainly") from None
    commands, words, targets = [], [], []
    pending = False
    for token in tokens:
        if pending:
            targets.append(token)
            pending = False
            continue
        if token in SEPARATORS or (set(token) <= set(";&|()\n") and token):
            if words or targets:
                commands.append((words, targets))
            words, targets = [], []
            continue
        if set(token) <= set("<>&|") or re.fullmatch(r"\d*[<>]+&?", token):
            if words and words[-1].isdigit():
                words.pop()  # the file descriptor of "2>"
            pending = ">" in token
            continue
        words.append(token)
    if words or targets:
        commands.append((words, targets))
    return commands


def _strip_wrappers(words: list[str], env: dict[str, str]) -> list[str]:
    """Look through assignments and wrappers: ``X=1 env -u Y command nice -n 5 git …`` → ``git …``."""
    words = list(words)
    for _ in range(20):
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0], re.S):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if not words:
            return words
        name = os.path.basename(words[0])
        if name not in WRAPPERS:
            return words
        words.pop(0)
        while words and words[0].startswith("-"):
            option = words.pop(0)
            if option == "--":
                break
            if name in ("env",) and option in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                if option in ("-S", "--split-string") and words:
                    words = shlex.split(words.pop(0)) + words
                elif words:
                    words.pop(0)
            elif name in ("nice", "ionice", "timeout", "flock", "watch", "xargs", "sudo", "doas", "stdbuf") \
                    and option in ("-n", "-c", "-s", "-k", "--signal", "-u", "-g", "-I", "-d", "-L", "-P", "-i",
                                   "-o", "-e", "--kill-after", "-w", "-E", "-a", "-l"):
                if words:
                    words.pop(0)
        if name == "timeout" and words and re.fullmatch(r"[\d.]+[smhd]?", words[0]):
            words.pop(0)
        if name == "flock" and words:
            words.pop(0)  # the lock file
    return words


INFO_FLAGS = ("-V", "-VV", "--version", "-h", "--help")
VALUE_FLAGS = ("-W", "-X", "-Q", "-I", "-M", "-r", "--require", "--import", "--loader", "-d", "-x")


def _reads_stdin(words: list[str]) -> bool:
    """True when the interpreter ``words`` (no -c/-e code) reads its program from stdin: no script
    or module after its options, or ``-`` in the script's place."""
    args = words[1:]
    n = 0
    while n < len(args):
        word = args[n]
        if word == "-":
            return True
        if word in INFO_FLAGS or word in ("-m", "--"):
            return False
        if not word.startswith("-"):
            return False  # a script file
        n += 2 if word in VALUE_FLAGS else 1
    return True


@dataclass
class Shell:
    """The walk through one Bash command: the directory each command runs in."""

    context: Context
    cwd: Path
    depth: int = 0

    def check(self, text: str) -> None:
        if self.depth > 8:
            raise Refused("parse", "the command nests shells too deep for the guard to read")
        for body in _substitutions(text):
            Shell(self.context, self.cwd, self.depth + 1).check(body)
        for words, targets in split_commands(text):
            env: dict[str, str] = {}
            for target in targets:
                if not re.fullmatch(r"&?\d*|/dev/(null|stdout|stderr|tty)", target):
                    check_write_path(self.context, _expand(target, self.context, self.cwd, env),
                                     "a redirection (>)")
            self.simple(words, env)

    def simple(self, words: list[str], env: dict[str, str]) -> None:
        words = _strip_wrappers(words, env)
        if not words:
            return
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"):
            if name in env:
                raise Refused("git-env", f"{name}= points git somewhere else; a shift's git runs in its worktree")
        program = os.path.basename(words[0])
        if program in ("cd", "pushd"):
            if len(words) > 1 and words[1] != "-":
                self.cwd = _expand(words[1], self.context, self.cwd, env)
            elif len(words) == 1:
                self.cwd = self.context.home
            return
        if _within(_resolved(self.cwd), self.context.root) and program not in READERS \
                and program not in ("sandman", "git"):
            # after `cd <root>/…` (or in a session started there) a relative path lands in the root
            raise Refused("memory-root", f"`{program}` would run in {self.cwd}, in the memory root, where its "
                          "relative paths and inline code write; only sandman's verbs write there: cd out first")
        if program in SHELLS:
            self.shell(words)
            return
        if program in ("eval", "source", ".", "alias", "function"):
            if program == "eval":
                self.deeper(" ".join(words[1:]))
                return
            if program == "alias":
                raise Refused("alias", "an alias hides what a command runs; run the command itself")
            return
        if program == "git":
            self.git(words[1:], env)
        elif program in ("pkill", "killall") and (program == "killall" or any(
                w == "-f" or (w.startswith("-") and not w.startswith("--") and "f" in w) or w == "--full"
                for w in words[1:])):
            raise Refused("pkill", f"{program} {'-f ' if program == 'pkill' else ''}kills by name or command "
                          "line: it reaches processes that are not the shift's; kill a pid you started")
        elif program in ("gh", "hub", "glab") and len(words) > 2 and words[1] in ("pr", "mr") \
                and words[2] in ("merge",):
            raise Refused("merge-pr", "merging a pull request is the owner's decision")
        self.owner(words)
        if program in SCRIPTERS or re.fullmatch(r"python3(\.\d+)?|pypy3?", program):
            self.script(words)
        if program not in READERS and program not in ("sandman",):
            self.words_write(words, env, program)

    def deeper(self, text: str) -> None:
        Shell(self.context, self.cwd, self.depth + 1).check(text)

    def shell(self, words: list[str]) -> None:
        args = words[1:]
        for n, arg in enumerate(args):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                if n + 1 < len(args):
                    self.deeper(args[n + 1])
                return
        if args and not args[0].startswith("-"):
            raise Refused("script", f"running the script {args[0]} with {words[0]} hides its commands from the "
                          "guard; run its commands one by one")
        # `bash` reading stdin (a pipe or a here-string): its commands are not in the call
        raise Refused("script", f"{words[0]} without -c reads commands the guard cannot see")

    def owner(self, words: list[str]) -> None:
        """Refuse an owner decision by any name: ``… report approve|decline``, ``… trail revoke``,
        ``… reconcile``, ``… forget``, ``… trail append <owner kind>`` (sandman renamed, copied or run
        through python keeps its words)."""
        lowered = [w.lower() for w in words]
        pairs = set(zip(lowered, lowered[1:]))
        if ("report", "approve") in pairs or ("report", "decline") in pairs:
            raise Refused("owner-decision", "approving or declining a proposal is the owner's decision, "
                          "never a shift's")
        if ("trail", "revoke") in pairs:
            raise Refused("owner-decision", "revoking is the owner's decision, never a shift's")
        for n, word in enumerate(lowered[:-1]):
            if word == "trail" and lowered[n + 1] == "append" and any(
                    kind in lowered[n + 2:] for kind in OWNER_KINDS):
                raise Refused("owner-decision", "the trail's owner decisions (revoke, reconcile, approve, "
                              "decline) are written by the owner's verbs only")
        sandman_like = os.path.basename(words[0]) == "sandman" or "sandman" in lowered[:4] \
            or any(w.endswith("sandman") or "sandman/__main__" in w for w in lowered[:4])
        if sandman_like and any(w in ("reconcile", "forget") for w in lowered[1:4]):
            raise Refused("owner-decision", f"`sandman {'reconcile' if 'reconcile' in lowered else 'forget'}` "
                          "is the owner's to run")

    def script(self, words: list[str]) -> None:
        """An interpreter's inline code: refused when it names the memory root, the trail, an owner
        decision or sandman's Python API (it would bypass the verbs' refusals)."""
        code = ""
        for n, word in enumerate(words[1:], 1):
            if word in ("-c", "-e", "-E", "--eval", "-r") and n + 1 < len(words):
                code = words[n + 1]
                break
        else:
            if len(words) > 1 and not words[1].startswith("-"):
                code = ""  # a script file: read by the sandbox's limits, not the guard
        if not code:
            if len(words) > 2 and words[1] == "-m" and words[2].split(".")[0] == "sandman":
                self.owner(["sandman", *words[3:]])
            elif _reads_stdin(words):
                raise Refused("script", f"{words[0]} reading its code from stdin (`| {words[0]} -`, a "
                              "here-document) hides it from the guard; pass it with -c or run a script file")
            return
        root = str(self.context.root)
        lowered = code.lower()
        if root in code or "sandman" in lowered or re.search(r"\btrail/|\.jsonl\b", code) \
                or any(kind in lowered for kind in ("proposal.approve", "proposal.decline")):
            raise Refused("memory-root", "inline code that reaches sandman, the memory root or the trail "
                          "bypasses sandman's verbs; use the `sandman` command")
        if re.search(r"\.github/workflows|\.gitlab-ci|\.circleci|(^|[\s'\"/])\.ci/", code):
            raise Refused("ci-file", "inline code that touches CI files; CI definitions are the owner's")
        if re.search(r"\bsubprocess\b|\bos\.system\b|\bexecv|\bspawn|child_process|\bsystem\s*\(|`", code) \
                and re.search(r"\bgit\b", code):
            raise Refused("script", "inline code that runs git hides the command from the guard; run git "
                          "itself")

    def words_write(self, words: list[str], env: dict[str, str], program: str) -> None:
        """A command that may write (cp, mv, tee, sed -i, rm, touch, dd of=…): refuse when a word
        names the memory root or a CI file, or the main checkout."""
        for word in words[1:]:
            value = word.split("=", 1)[1] if word.startswith(("of=", "--output=", "--target-directory=")) else word
            if value.startswith("-") or not value:
                continue
            if "/" not in value and not value.startswith(("~", "$", ".")) and not is_ci_path(value):
                continue
            path = _resolved(_expand(value, self.context, self.cwd, env))
            if _within(path, self.context.root) and (
                    _within(path, self.context.root / "trail") or program not in ("cp",) or word != words[1]):
                check_write_path(self.context, path, f"`{program}`")
            elif is_ci_path(str(path)):
                check_write_path(self.context, path, f"`{program}`")
            elif self.context.worktree is not None and _within(path, self.context.repo) \
                    and not _within(path, self.context.worktree) and not (program == "cp" and word == words[1]):
                check_write_path(self.context, path, f"`{program}`")

    # --- git ----------------------------------------------------------------------------------

    def git(self, args: list[str], env: dict[str, str]) -> None:
        where = self.cwd
        args = list(args)
        while args and args[0].startswith("-"):
            option = args.pop(0)
            name, has_value, value = option.partition("=")
            if name in GIT_OPTS_WITH_VALUE and not has_value:
                value = args.pop(0) if args else ""
            if name == "-C":
                where = _expand(value, self.context, where, env)
            elif name == "-c" or name == "--config-env":
                key = value.split("=", 1)[0].lower()
                if key.startswith("alias.") or key in ("core.hookspath", "core.worktree", "core.bare",
                                                       "include.path") or key.startswith("includeif"):
                    raise Refused("git-config", f"git -c {key} changes what git runs; not in a shift")
            elif name in ("--git-dir", "--work-tree", "--namespace", "--exec-path"):
                raise Refused("git-dir", f"git {name} points git at another repository; a shift's git runs "
                              "in its worktree")
        if not args:
            return
        sub, rest = args[0], args[1:]
        if sub in GIT_NEVER:
            raise Refused(f"git-{sub}", GIT_NEVER[sub])
        if sub not in GIT_READ and sub not in GIT_WRITE:
            raise Refused("git-unknown", f"`git {sub}` is not a git command the guard knows (an alias?); "
                          "run the git command itself")
        if sub == "config":
            self.git_config(rest)
            return
        if sub == "push":
            self.git_push(rest)
        if sub == "commit" and any(w == "--amend" or w.startswith("--amend") for w in rest):
            raise Refused("git-amend", "git commit --amend rewrites a commit; make a new one")
        if sub == "branch" and any(w in ("-D", "-f", "--force", "-m", "-M", "--move", "-c", "-C", "--copy",
                                         "-d", "--delete", "-u", "--set-upstream-to", "--unset-upstream")
                                   or re.fullmatch(r"-[a-zA-Z]*[DfmMcC][a-zA-Z]*", w) for w in rest):
            raise Refused("git-branch", "moving, renaming or deleting a branch is not a shift's")
        if sub == "restore" and not ({"--staged", "-S"} & set(rest) and not {"--worktree", "-W"} & set(rest)):
            raise Refused("git-restore", "git restore of the working tree discards work; only "
                          "`git restore --staged` is a shift's")
        if sub == "tag" and any(w in ("-d", "--delete", "-f", "--force") for w in rest):
            raise Refused("git-tag", "deleting or moving a tag is not a shift's")
        if sub == "submodule" and rest[:1] and rest[0] not in ("status", "summary", "foreach"):
            raise Refused("git-submodule", "changing submodules is not a shift's")
        if sub in GIT_WRITE and sub not in ("push",):
            self.git_where(sub, _resolved(where))

    def git_config(self, rest: list[str]) -> None:
        reading = {"--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list", "--show-origin",
                   "--name-only", "--show-scope"}
        values = [w for w in rest if not w.startswith("-")]
        if reading & set(rest) or (values[:1] in (["get"], ["list"])) or len(values) <= 1:
            return
        raise Refused("git-config", "git config writes are the owner's (an alias, a hook path …)")

    def git_push(self, rest: list[str]) -> None:
        force = {"-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "-d",
                 "--all", "--prune", "--tags"}
        if any(w in force or w.startswith("--force") or re.fullmatch(r"-[a-zA-Z]*[fd][a-zA-Z]*", w)
               for w in rest):
            raise Refused("git-push-force", "a force push (or a delete, a mirror) rewrites the remote")
        specs = [w for w in rest if not w.startswith("-")][1:]
        if any(spec.startswith("+") for spec in specs):
            raise Refused("git-push-force", "a `+refspec` is a force push")
        branch = self.context.branch
        trunks = set(TRUNK_NAMES) | ({self.context.trunk} if self.context.trunk else set())
        for spec in specs:
            destination = spec.split(":", 1)[-1].removeprefix("refs/heads/")
            if destination in trunks or destination == "HEAD" or spec.split(":", 1)[0] in trunks:
                raise Refused("git-push-trunk", f"a push to the trunk ({destination}) is the owner's; the "
                              "shift's work stays on its branch")
        if not branch or specs != [branch]:
            raise Refused("git-push", f"a shift pushes nothing but its own branch, named: "
                          f"`git push <remote> {branch or 'shift/<id>'}`")

    def git_where(self, sub: str, where: Path) -> None:
        context = self.context
        if context.worktree is None:
            if _within(where, context.root):
                raise Refused("memory-root", f"`git {sub}` in the memory root; sandman commits there itself")
            return
        if _within(where, context.worktree):
            return
        if context.repo is not None and _within(where, context.repo):
            raise Refused("main-checkout", f"`git {sub}` in the main checkout {context.repo}: a shift works in "
                          f"its worktree {context.worktree}, on {context.branch}, never on the trunk")
        raise Refused("outside-worktree", f"`git {sub}` in {where}, outside the shift's worktree "
                      f"{context.worktree}")


# --- the decision ------------------------------------------------------------------------------


def decide(payload: object, context: Context) -> None:
    """Raise Refused when the ``PreToolUse`` call ``payload`` must not run; return when it may."""
    if not isinstance(payload, dict):
        raise Refused("payload", "the guard received no tool call it can read")
    tool = payload.get("tool_name")
    data = payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(data, dict):
        raise Refused("payload", "the guard received no tool name or input it can read")
    cwd_text = payload.get("cwd")
    cwd = Path(cwd_text) if isinstance(cwd_text, str) and cwd_text.startswith("/") else (
        context.worktree or Path.cwd())
    if tool == "Bash":
        command = data.get("command")
        if not isinstance(command, str):
            raise Refused("payload", "a Bash call with no command")
        if data.get("dangerouslyDisableSandbox"):
            raise Refused("sandbox", "a shift's commands run in the sandbox; dangerouslyDisableSandbox is refused")
        Shell(context, cwd).check(command)
    elif tool in WRITE_TOOLS:
        target = data.get("file_path") or data.get("notebook_path")
        if not isinstance(target, str) or not target:
            raise Refused("payload", f"a {tool} call with no file_path")
        check_write_path(context, _expand(target, context, cwd, {}), f"{tool}")


# --- the reading session's mode (docs/breathe.md, "The runner") ----------------------------------

READING_TOOLS = ("Read", "Glob", "Grep")
# ``sandman breathe`` subcommands a reading session may run: its writes (file, close) and reads.
READING_VERBS = ("file", "close", "list", "sources")
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1[^\n]*\n")


def _without_heredocs(command: str) -> str:
    """``command`` with each here-document's body cut out (stdin data, not commands); an unclosed
    one keeps its body, which the guard then reads as commands and refuses."""
    out, n = [], 0
    while True:
        match = _HEREDOC.search(command, n)
        if match is None:
            return "".join(out) + command[n:]
        end = re.search(rf"^[\t]*{re.escape(match.group(2))}[ \t]*$", command[match.end():], re.MULTILINE)
        if end is None:
            return "".join(out) + command[n:]
        out.append(command[n:match.end()])
        n = match.end() + end.end()


def _hosts_of_pass(root: Path, pass_id: str) -> set[str]:
    """The hosts of the sources a pass reads (``breath/passes/<id>/pass.json``); empty when unreadable."""
    from urllib.parse import urlsplit

    try:
        data = json.loads((root / "breath" / "passes" / pass_id / "pass.json").read_text(encoding="utf-8"))
        return {(urlsplit(s["address"]).hostname or "").lower() for s in data["sources"]} - {""}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def decide_reading(payload: object, root: Path, pass_id: str) -> None:
    """Raise Refused when a reading session's call ``payload`` must not run: only READING_TOOLS,
    ``WebFetch`` of a host the pass's sources name, and Bash whose every command (here-document
    bodies aside) is ``sandman breathe`` READING_VERBS or a READERS command, with no redirection to
    a file and no command substitution."""
    from urllib.parse import urlsplit

    if not isinstance(payload, dict) or not isinstance(payload.get("tool_input"), dict):
        raise Refused("payload", "the guard received no tool call it can read")
    tool, data = payload.get("tool_name"), payload["tool_input"]
    if tool in READING_TOOLS:
        return
    if tool == "WebFetch":
        host = (urlsplit(str(data.get("url") or "")).hostname or "").lower()
        if host and host in _hosts_of_pass(root, pass_id):
            return
        raise Refused("reading-network", f"WebFetch of {host or 'no host'}: a reading pass fetches only the "
                      "hosts of its sources")
    if tool != "Bash":
        raise Refused("reading-tool", f"a reading session may not use {tool}: it reads, and writes only with "
                      "`sandman breathe file` and `sandman breathe close`")
    command = data.get("command")
    if not isinstance(command, str):
        raise Refused("payload", "a Bash call with no command")
    if data.get("dangerouslyDisableSandbox"):
        raise Refused("sandbox", "a reading session's commands run in the sandbox")
    command = _without_heredocs(command)
    if _substitutions(command):
        raise Refused("reading-command", "command substitution in a reading session; write the command plainly")
    for words, targets in split_commands(command):
        if any(not re.fullmatch(r"&?\d*|/dev/(null|stdout|stderr)", target) for target in targets):
            raise Refused("reading-write", "a redirection to a file: a reading session writes only breaths")
        if not words:
            continue
        name = os.path.basename(words[0])
        if name == "sandman" and words[1:2] == ["breathe"] and words[2:3] and words[2] in READING_VERBS:
            continue
        if name in READERS:
            continue
        raise Refused("reading-command", f"`{' '.join(words)[:80]}`: a reading session runs only `sandman "
                      f"breathe {'|'.join(READING_VERBS)}` and read-only commands")


def record(context: Context, tool: str, rule: str, reason: str, call: object) -> None:
    """Append the ``guard.deny`` event (docs/BANK-FORMAT.md § trail). Never raises."""
    try:
        from sandman.layout import Layout
        from sandman.machine import trail as trails

        text = json.dumps(call, ensure_ascii=False)[:RULE_MAX_INPUT_CHARS]
        trails.append(Layout(context.root), GUARD_KIND, f"refused {tool}: {reason}"[:300], shift=context.shift,
                      repo=str(context.repo) if context.repo else None,
                      data={"tool": tool, "rule": rule, "input": text})
    except Exception as error:  # the deny stands; the journal says the event was lost
        try:
            from sandman import journal
            from sandman.layout import Layout

            journal.write(Layout(context.root), "shift", "guard-unrecorded", rule=rule, error=str(error)[:200])
        except Exception:
            pass


def deny_output(reason: str, who: str = "shift") -> str:
    """The hook's deny; ``who`` names the session the guard serves (``shift`` or ``reading``)."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                              "permissionDecisionReason": f"sandman {who} guard: {reason}"}})


def hook(stdin: str, root: Path, shift: str | None, pass_id: str | None = None) -> str:
    """One hook call: ``""`` to allow, else the deny JSON (the event appended). Fails closed.
    ``pass_id``: the call is a reading session's (decide_reading), not a shift's."""
    payload: object = None
    tool = "?"
    context = Context(root=root, shift=shift)
    try:
        context = load_context(root, shift)
        payload = json.loads(stdin)
        tool = str(payload.get("tool_name")) if isinstance(payload, dict) else "?"
        if pass_id:
            decide_reading(payload, root, pass_id)
        else:
            decide(payload, context)
        return ""
    except Refused as refused:
        rule, reason = refused.rule, refused.reason
    except Exception as error:  # fail closed: an error of the guard is a deny
        rule, reason = "guard-error", f"the guard failed ({type(error).__name__}: {error}); refused to be safe"
    call = payload.get("tool_input") if isinstance(payload, dict) else stdin[:RULE_MAX_INPUT_CHARS]
    record(context, tool, rule, reason, call)
    return deny_output(reason, "reading" if pass_id else "shift")


def main(argv: list[str] | None = None) -> int:
    """``python -m sandman.machine.guard --hook --root ROOT [--shift ID] [--pass PASS]``: always exit 0 with the
    decision on stdout, unless Python itself fails (then the hook's ``|| exit 2`` blocks)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    root_text = argv[argv.index("--root") + 1] if "--root" in argv[:-1] else os.environ.get("SANDMAN_ROOT", "")
    shift = argv[argv.index("--shift") + 1] if "--shift" in argv[:-1] else os.environ.get("SANDMAN_SHIFT")
    pass_id = argv[argv.index("--pass") + 1] if "--pass" in argv[:-1] else None
    root = Path(root_text or Path.home() / ".sandman")
    try:
        stdin = sys.stdin.read()
    except Exception:
        stdin = ""
    sys.stdout.write(hook(stdin, root, shift, pass_id))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
