"""One test per cell of matrix.toml: the plugin parametrizes it and skips the cells the rules exclude."""

from __future__ import annotations


def attention_scores(seqlen: int) -> list[float]:
    """A stand-in for the real kernel: uniform attention weights over the sequence."""
    return [1.0 / seqlen] * seqlen


def test_attention_sums_to_one(matrix_cell):
    scores = attention_scores(matrix_cell.seqlen)
    assert abs(sum(scores) - 1.0) < 1e-9
