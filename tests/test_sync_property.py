"""Never a lost memory: over randomized divergent histories, every memory file either side
held before a sync is there after it, live or in _archive/ (docs/sync.md, "Never a lost memory")."""

from __future__ import annotations

import random

import pytest
from helpers import git
from syncworld import PROJECT, add, archive, edit, head, make_world, versioned

from sandman.banks import frontmatter
from sandman.banks.index import memory_files, render_index
from sandman.banks.names import bank_name
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.verbs.sync import sync

BANKS = (PROJECT, "/work/other")
SHARED_NAMES = ("Alpha", "Beta", "Gamma")  # both sides draw from these, so they collide


def memory_versions(layout: Layout) -> dict[str, bytes]:
    """Every memory file of every bank, live and archived: relative path -> bytes."""
    out = {}
    for directory in BANKS:
        folder = layout.bank(bank_name(directory))
        for path in [*memory_files(folder), *sorted((folder / BANK_ARCHIVE).glob("*.md"))]:
            out[path.relative_to(layout.root).as_posix()] = path.read_bytes()
    return out


def survives(path: str, data: bytes, after: dict[str, bytes]) -> bool:
    """``data`` is in the same bank after the sync: byte for byte, or as the copy kept beside
    a conflicting version (the same text plus ``conflict_of: <its file name>``)."""
    bank = path.split("/")[1]
    in_bank = {p: d for p, d in after.items() if p.split("/")[1] == bank}
    if data in in_bank.values():
        return True
    front, body = frontmatter.parse(data.decode())
    for candidate in in_bank.values():
        other_front, other_body = frontmatter.parse(candidate.decode())
        if other_front.get("conflict_of") == path.rsplit("/", 1)[1] and other_body == body:
            other_front.remove("conflict_of")
            if other_front.to_dict() == front.to_dict():
                return True
    return False


def random_work(layout: Layout, rng: random.Random, side: str, steps: int) -> None:
    for step in range(steps):
        directory = rng.choice(BANKS)
        live = memory_files(layout.bank(bank_name(directory)))
        move = rng.choice(["add", "add", "edit", "edit", "archive"] if live else ["add"])
        if move == "add":
            name = rng.choice(SHARED_NAMES) if rng.random() < 0.7 else f"{side} note {step}"
            add(layout, name, f"{side} wrote this at step {step} ({rng.random():.6f}).", directory=directory)
        elif move == "edit":
            edit(layout, rng.choice(live).name, f"{side} edited at step {step} ({rng.random():.6f}).", directory)
        else:
            archive(layout, rng.choice(live).name, directory)


@pytest.mark.parametrize("seed", range(12))  # 1, 4: both-changed; 10: both-added; 0: edit-kept
def test_no_memory_is_lost_over_random_divergent_histories(tmp_path, seed):
    rng = random.Random(seed)
    world = make_world(tmp_path)
    for name in SHARED_NAMES[: 1 + seed % 3]:
        add(world.a, name, f"The shared {name}.", directory=rng.choice(BANKS))
    sync(world.a)
    sync(world.b)
    random_work(world.a, rng, "A", rng.randint(3, 8))
    random_work(world.b, rng, "B", rng.randint(3, 8))
    before = {**memory_versions(world.a), **{f"b:{p}": d for p, d in memory_versions(world.b).items()}}
    for side in (world.a, world.b, world.a):
        sync(side)
    assert head(world.a) == head(world.b)
    assert versioned(world.a) == versioned(world.b)
    after = memory_versions(world.b)
    lost = [path for path, data in before.items() if not survives(path.removeprefix("b:"), data, after)]
    assert lost == []
    for side in (world.a, world.b):
        assert git(side.root, "status", "--porcelain", "--untracked-files=all") == ""
        for directory in BANKS:
            folder = side.bank(bank_name(directory))
            if folder.is_dir():
                assert (folder / BANK_INDEX).read_text(encoding="utf-8") == render_index(folder)
