"""What a critique keeps between critiques: the last value per key, for the few keys kept most
recently, and nothing of a key it is told to forget."""

from __future__ import annotations

from reviews.critique.kept import KeptPerStrategy


def test_the_key_kept_longest_ago_goes_first_when_more_are_kept_than_it_holds():
    kept: KeptPerStrategy[int, str] = KeptPerStrategy(2)
    kept.keep(1, "one")
    kept.keep(2, "two")
    kept.keep(1, "one again")  # kept again: now the most recent
    kept.keep(3, "three")

    assert (kept.get(1), kept.get(2), kept.get(3)) == ("one again", None, "three")


def test_forget_drops_every_key_it_names_and_only_those():
    kept: KeptPerStrategy[tuple[int, bool], str] = KeptPerStrategy(4)
    for key in [(7, True), (7, False), (8, True)]:
        kept.keep(key, str(key))

    kept.forget(lambda key: key[0] == 7)

    assert [kept.get(key) for key in [(7, True), (7, False), (8, True)]] == [None, None, "(8, True)"]
