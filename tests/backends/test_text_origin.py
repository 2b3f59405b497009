"""Origins of parsed text: splitting one, and mapping one parser's output back to its source."""

from __future__ import annotations

from backends.text_origin import WRITTEN, Relay, split_origin


def test_split_cuts_the_piece_that_holds_the_point() -> None:
    """A piece across the point is cut in two; written text stays written."""
    assert split_origin([(5, 3), (WRITTEN, 2), (20, 4)], 4) == (
        [(5, 3), (WRITTEN, 1)],
        [(WRITTEN, 1), (20, 4)],
    )
    assert split_origin([(5, 3)], 1) == ([(5, 1)], [(6, 2)])
    assert split_origin([(5, 3)], 0) == ([], [(5, 3)])


def test_relay_maps_positions_back_and_keeps_written_text() -> None:
    """Text fed on is made of source pieces and written ones: positions in it map back to the
    source, a written piece stays written (the lengths still add up), across boundaries."""
    relay = Relay()
    relay.extend([(10, 4), (WRITTEN, 3)])  # positions 0-3 are source 10-13; 4-6 written
    relay.extend([(30, 5)])  # positions 7-11 are source 30-34
    assert relay.source([(2, 7)]) == [(12, 2), (WRITTEN, 3), (30, 2)]
    assert relay.source([(WRITTEN, 1), (9, 3)]) == [(WRITTEN, 1), (32, 3)]
