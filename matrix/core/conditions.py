"""Evaluate one rule condition against a value; pure and total."""

from __future__ import annotations

from matrix.core.model import Condition, Op, Value


def holds(condition: Condition, value: Value | None) -> bool:
    """True when `value` satisfies the condition; a missing value satisfies nothing."""
    if value is None:
        return False
    operand = condition.operand
    match condition.op:
        case Op.IN | Op.EQ:
            return value in operand
        case Op.NOT_IN | Op.NE:
            return value not in operand
        case Op.GT | Op.GE | Op.LT | Op.LE:
            if not isinstance(value, int) or not isinstance(operand[0], int):
                return False
            bound = operand[0]
            return {
                Op.GT: value > bound,
                Op.GE: value >= bound,
                Op.LT: value < bound,
                Op.LE: value <= bound,
            }[condition.op]
    return False  # pragma: no cover - Op is closed


def describe(condition: Condition) -> str:
    """`topk eq 1`, `sm in [90, 120]`."""
    operand = condition.operand
    shown = str(list(operand)) if condition.op in (Op.IN, Op.NOT_IN) else str(operand[0])
    return f"{condition.subject} {condition.op.value} {shown}"
