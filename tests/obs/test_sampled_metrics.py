"""Sampled totals advance their counters by the difference, and restart from zero; the
encoders' counts become per-encoder series."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from obs.sampled_metrics import SampledMetrics, added


def test_a_total_advances_by_its_difference() -> None:
    """A cumulative total adds what it gained since the last sample."""
    assert added(7, 2) == 5
    assert added(7, 7) == 0


def test_a_total_below_the_last_is_a_new_source_counted_from_zero() -> None:
    """A restarted queue or bound reports a smaller total: all of it is new."""
    assert added(3, 7) == 3


def test_encoder_counts_become_per_encoder_series() -> None:
    """Each encoder's totals advance its own counters by their difference between samples;
    its queue is a gauge."""
    registry = CollectorRegistry()
    sampled = SampledMetrics(registry)
    totals = {"texts": 10, "batches": 4, "failures": 0, "cancelled": 1, "refused": 2}
    sampled.encoder("embedder-onnx", totals, 3)
    sampled.encoder("embedder-onnx", {**totals, "texts": 16}, 0)
    sampled.encoder("clause-judge-onnx", {**totals, "texts": 1}, 0)

    def value(name: str, encoder: str) -> float | None:
        return registry.get_sample_value(name, {"encoder": encoder})

    assert value("gateway_encoder_texts_total", "embedder-onnx") == 16
    assert value("gateway_encoder_texts_total", "clause-judge-onnx") == 1
    assert value("gateway_encoder_batches_total", "embedder-onnx") == 4
    assert value("gateway_encoder_refused_texts_total", "embedder-onnx") == 2
    assert value("gateway_encoder_cancelled_texts_total", "embedder-onnx") == 1
    assert value("gateway_encoder_failed_batches_total", "embedder-onnx") is None  # never inc
    assert value("gateway_encoder_queued_texts", "embedder-onnx") == 0
