"""The error hierarchy's messages and shapes."""

from __future__ import annotations

from core.errors import DeadlineExceeded
from core.stages import StageName


def test_deadline_message_names_the_stage_by_its_value() -> None:
    """A deadline error names the stage as the client reads it, not as a Python enum."""
    exc = DeadlineExceeded(StageName.TTFT)
    assert exc.message == "Deadline exceeded in stage ttft."
    assert exc.stage == "ttft" and type(exc.stage) is str
    assert exc.to_dict()["error"]["message"] == "Deadline exceeded in stage ttft."
