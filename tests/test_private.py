"""Private spans: ``<private>…</private>`` never reaches a mind, a memory, a pointer or the site,
and the archived transcript stays byte-identical (docs/BANK-FORMAT.md, "Private spans")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dream_helpers import model, proposal
from sandman import private
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.transcripts import read_session, summarize
from sandman.verbs.dream import dream
from sandman.verbs.remember import remember
from sandman.verbs.site import site
from sandman.verbs.take import take

SECRET = "the vault passphrase is orange-kettle-42"
SID = "0a1b2c3d-0000-4000-8000-000000000019"


def test_redact_hides_spans_tags_included_and_an_unclosed_span_to_the_end() -> None:
    assert private.redact("a <private>b</private> c <PRIVATE>d\ne</Private> f") == "a [private] c [private] f"
    assert private.redact("keep <private>cut short at eighty charac") == "keep [private]"
    assert private.redact("a stray </private> stays") == "a stray </private> stays"


def test_scrub_also_hides_the_text_where_it_recurs_unmarked() -> None:
    spans = private.Spans()
    spans.person(f"<private> {SECRET} </private> <private>yes</private>")
    assert spans.scrub(f"You said {SECRET}.") == "You said [private]."
    assert spans.scrub("yes, and yes") == "yes, and yes", "a short span is not hunted elsewhere"


def test_private_nested_span_hides_its_tail() -> None:
    assert private.redact("x <private>A <private>B</private> TAIL</private> y") == "x [private] y"
    assert private.redact("<private>a<PRIVATE>b</private>c") == "[private]", "still open: the rest is hidden"
    assert private.redact("a </private> b <private>c</private></private> d") == "a </private> b [private]</private> d"


def test_private_unclosed_opener_hides_the_rest_of_the_session() -> None:
    spans = private.Spans()
    assert spans.person("keep <private>hide") == "keep [private]"
    assert spans.other("the reply") == "[private]"
    assert spans.person("still hidden</private> shown") == "[private] shown"
    assert spans.other("a reply </private> after") == "a reply </private> after", "a reply closes nothing"
    assert spans.other("a reply <private>opens") == "a reply [private]"
    assert spans.person("and the next prompt") == "and the next prompt", "a reply's opener is its own"


# The property: a word is shown exactly when no span is open where it stands. Tokens are
# tags (in any case) and numbered words; the model below is the grammar, counted by hand.
_TAGS = st.sampled_from(["<private>", "</private>", "<PRIVATE>", "</Private>", "<private", "private>"])


def _texts(tokens: list[str]) -> list[tuple[str, bool]]:
    depth, shown = 0, []
    for number, token in enumerate(tokens):
        if token.lower() == "<private>":
            depth += 1
        elif token.lower() == "</private>":
            depth = max(depth - 1, 0)
        elif token == "word":
            shown.append((f"w{number}x", depth == 0))
    return shown


def _join(tokens: list[str]) -> str:
    return " ".join(f"w{number}x" if token == "word" else token for number, token in enumerate(tokens))


_TOKENS = st.lists(st.one_of(_TAGS, st.just("word")), max_size=40)


@settings(max_examples=300, deadline=None)
@given(tokens=_TOKENS, cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=5))
def test_private_property_a_word_is_shown_exactly_when_no_span_is_open(tokens: list[str], cuts: list[int]) -> None:
    words = _join(tokens).split(" ")
    one = private.redact(" ".join(words))
    # The same tokens typed as several prompts of one session: the depth carries over.
    spans, parts, start = private.Spans(), [], 0
    for end in sorted(set(cuts)) + [len(words)]:
        parts.append(spans.person(" ".join(words[start:end])))
        start = max(start, end)
    many = " ".join(parts)
    for word, shown in _texts(tokens):
        assert (word in one) == shown, (one, word)
        assert (word in many) == shown, (many, word)
    assert not private.TAG.search(one.replace("</private>", "").replace("</Private>", "")), "no opener survives"
    assert private.redact(one) == one, "hiding is idempotent"


def transcript(cwd: Path) -> str:
    lines = [
        {"type": "user", "sessionId": SID, "cwd": str(cwd), "timestamp": "2026-11-30T10:00:00Z", "uuid": "u1",
         "parentUuid": None, "message": {"role": "user", "content":
                                         f"Set up the deploy. <private>{SECRET}</private> Use make."}},
        {"type": "assistant", "sessionId": SID, "cwd": str(cwd), "timestamp": "2026-11-30T10:00:05Z",
         "uuid": "u2", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": f"Understood: {SECRET}."}]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def everything_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and ".archive" not in path.parts]


def test_a_private_span_reaches_no_mind_memory_pointer_or_page(layout: Layout, isolated: Path, fake_claude) -> None:
    cwd = isolated / "proj"
    cwd.mkdir()
    live = isolated / "live" / f"{SID}.jsonl"
    live.parent.mkdir()
    live.write_text(transcript(cwd), encoding="utf-8")
    original = live.read_bytes()
    # A mind whose reply carries a private span (it never read one: a scripted reply).
    echo = proposal(cwd, "Deploy setup", "How the deploy is set up",
                    body="Use make. <private>a note the mind marked private</private>")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(model(mind), {"memories": [echo]})

    taken = take(layout, SID, force=True, transcript=live)
    assert taken.archived.read_bytes() == original, "the archive keeps every byte"
    pointer = read_pointer(taken.pointer)
    assert SECRET not in taken.pointer.read_text(encoding="utf-8")
    assert pointer.data["title"] == "Set up the deploy. [private] Use make."
    dream(layout, now=True)

    prompts = [call["prompt"] for call in fake_claude.calls()]
    assert prompts and all(SECRET not in prompt for prompt in prompts)
    assert any("USER: Set up the deploy. [private] Use make." in prompt for prompt in prompts)
    memories = list(layout.memories.glob("*/project_*.md"))
    assert [path.read_text(encoding="utf-8").split("\n---\n\n")[1] for path in memories] == ["Use make. [private]\n"]
    site(layout)
    for path in everything_under(layout.root):
        assert SECRET.encode() not in path.read_bytes(), path


def test_the_readers_hide_private_spans_in_title_turns_and_highlights(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(transcript(tmp_path), encoding="utf-8")
    for session in (read_session(path), summarize(path)):
        assert session.title == "Set up the deploy. [private] Use make."
        assert all(SECRET not in turn.text for turn in session.turns)


def test_remember_hides_a_private_span_and_refuses_a_body_that_is_all_private(layout: Layout,
                                                                             isolated: Path) -> None:
    committed = remember(layout, f"Deploys use make. <private>{SECRET}</private>", cwd=str(isolated))
    text = committed.path.read_text(encoding="utf-8")
    assert SECRET not in text and "Deploys use make. [private]" in text
    with pytest.raises(InputError, match=r"memory body is all <private>…</private>; nothing is left to remember"):
        remember(layout, f"<private>{SECRET}</private>", cwd=str(isolated))


NESTED_TAIL = "tail-of-the-outer-span-7781"
AFTER_OPEN = "typed-after-an-unclosed-opener-5512"
REPLY_AFTER = "replied-after-an-unclosed-opener-9034"
MIND_TAIL = "a-mind-marked-this-private-6620"  # in a mind's raw transcript (.dream/live), never a bank or page


def hostile_transcript(cwd: Path) -> str:
    def user(uuid: str, at: str, text: str) -> dict:
        return {"type": "user", "sessionId": SID, "cwd": str(cwd), "timestamp": at, "uuid": uuid,
                "message": {"role": "user", "content": text}}

    def reply(uuid: str, at: str, text: str) -> dict:
        return {"type": "assistant", "sessionId": SID, "cwd": str(cwd), "timestamp": at, "uuid": uuid,
                "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}

    lines = [
        user("u1", "2026-11-30T10:00:00Z",
             f"Fix the build <private>A <private>B</private> {NESTED_TAIL}</private> now"),
        reply("u2", "2026-11-30T10:00:05Z", "Done: the build is fixed with make."),
        user("u3", "2026-11-30T10:00:10Z", "Also <private>the token is"),
        user("u4", "2026-11-30T10:00:15Z", AFTER_OPEN),
        reply("u5", "2026-11-30T10:00:20Z", REPLY_AFTER),
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_private_nested_and_unclosed_spans_reach_no_pointer_mind_memory_or_page(
        layout: Layout, isolated: Path, fake_claude) -> None:
    cwd = isolated / "proj"
    cwd.mkdir()
    live = isolated / "live" / f"{SID}.jsonl"
    live.parent.mkdir()
    live.write_text(hostile_transcript(cwd), encoding="utf-8")
    echo = proposal(cwd, "Build fix", "How the build is fixed",
                    body=f"Use make. <private>x <private>y</private> {MIND_TAIL}</private> done")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(model(mind), {"memories": [echo]})

    taken = take(layout, SID, force=True, transcript=live)
    assert read_pointer(taken.pointer).data["title"] == "Fix the build [private] now"
    dream(layout, now=True)
    prompts = [call["prompt"] for call in fake_claude.calls()]
    assert prompts and any("USER: Fix the build [private] now" in prompt for prompt in prompts)
    assert any("USER: Also [private]" in prompt for prompt in prompts)
    for secret in (NESTED_TAIL, AFTER_OPEN, REPLY_AFTER):
        assert all(secret not in prompt for prompt in prompts), secret
    remember(layout, f"Deploy with make <private>a <private>b</private> {NESTED_TAIL}</private> daily",
             cwd=str(cwd))
    site(layout)
    bodies = [path.read_text(encoding="utf-8") for path in layout.memories.glob("*/*.md")]
    assert any("Use make. [private] done" in body for body in bodies)
    assert any("Deploy with make [private] daily" in body for body in bodies)
    for path in everything_under(layout.root):
        data = path.read_bytes()
        for secret in (NESTED_TAIL, AFTER_OPEN, REPLY_AFTER):
            assert secret.encode() not in data, (path, secret)
    for path in [*layout.memories.rglob("*.md"), *(layout.root / ".site").rglob("*")]:
        assert not path.is_file() or MIND_TAIL.encode() not in path.read_bytes(), path


def test_private_spans_agree_on_the_lean_and_the_full_read(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    text = hostile_transcript(tmp_path)
    # A remember after the unclosed opener: its body is hidden, so it gives no highlight.
    call = {"type": "assistant", "sessionId": SID, "timestamp": "2026-11-30T10:00:30Z", "uuid": "u6",
            "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                          "input": {"command": f"sandman remember '{REPLY_AFTER}'"}}]}}
    result = {"type": "user", "sessionId": SID, "timestamp": "2026-11-30T10:00:31Z", "uuid": "u7",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                       "content": "remembered"}]}}
    path.write_text(text + json.dumps(call) + "\n" + json.dumps(result) + "\n", encoding="utf-8")
    full, lean = read_session(path), summarize(path)
    assert full.title == lean.title == "Fix the build [private] now"
    assert full.highlights == lean.highlights == []
    assert [turn.text for turn in full.turns if turn.role in ("user", "assistant")] == [
        "Fix the build [private] now", "Done: the build is fixed with make.", "Also [private]", "[private]",
        "[private]"]


def test_regression_a_hand_edited_memory_leaked_its_private_spans_through_recall(tmp_path):
    """Found by a tester: search and the site hid a span a person added to a memory file by hand, but
    recall (--cwd, --hook, the MCP tool) printed it raw, tags included, into the model's context."""
    import json
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    project = home / "proj"
    project.mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "SANDMAN_ROOT": str(home / ".sandman")}
    run = lambda *args, stdin=None: subprocess.run([sys.executable, "-m", "sandman", *args], env=env,  # noqa: E731
                                                   input=stdin, capture_output=True, cwd=project)
    done = run("remember", "Prefer small pull requests; the user reviews them on Fridays.", "--cwd", str(project))
    assert done.returncode == 0, done.stderr
    path = __import__("pathlib").Path(done.stdout.decode().strip())
    with path.open("a", encoding="utf-8") as stream:
        stream.write("Also <private>LEAKM1 reviewer is bob</private> and <private>LEAKM2 unclosed tail\n")
    shown = run("recall", "--cwd", str(project)).stdout.decode()
    payload = json.dumps({"session_id": "s-1", "cwd": str(project), "hook_event_name": "SessionStart",
                          "source": "startup"}).encode()
    hooked = run("recall", "--hook", stdin=payload).stdout.decode()
    for text in (shown, hooked):
        assert "Prefer small pull requests" in text and "[private]" in text
        assert "LEAKM1" not in text and "LEAKM2" not in text and "bob" not in text
