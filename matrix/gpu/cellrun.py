"""`python -m matrix.gpu.cellrun CELL --level LEVEL`: one check (any level of matrix/core/levels.py), result as one JSON line."""

from __future__ import annotations

import argparse
import json
import sys

from matrix.core.levels import Level
from matrix.core.loader import load_matrix
from matrix.gpu.cases import SIZING_PLANTS, draft_case, expanded_graph_rows
from matrix.gpu.isolation import RESULT_PREFIX


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matrix.gpu.cellrun")
    parser.add_argument("cell")
    parser.add_argument("--level", choices=[level.value for level in Level], required=True)
    parser.add_argument("--sizing-plant", choices=sorted(SIZING_PLANTS), default=None)
    parser.add_argument("--no-contract", action="store_true", help="skip the contract check (shows what the bug does)")
    parser.add_argument("--plant", choices=["illegal-address"], default=None, help="plant a real CUDA error")
    args = parser.parse_args(argv)

    from matrix.gpu import checks, contract
    from matrix.sglang_check.identity import BackendMismatch

    try:
        case = draft_case(load_matrix().cell(args.cell))
    except ValueError as exc:  # a cell the GPU checks cannot model: a failure with its reason, not a crash
        print(RESULT_PREFIX + json.dumps({"message": str(exc), "status": "failed"}), flush=True)
        return 1
    rows = SIZING_PLANTS[args.sizing_plant] if args.sizing_plant else expanded_graph_rows
    try:
        report = checks.CHECKS[args.level](case, graph_rows=rows, enforce_contract=not args.no_contract, plant=args.plant)
    except (contract.ContractViolation, checks.AccuracyError, BackendMismatch) as exc:
        print(RESULT_PREFIX + json.dumps({"message": str(exc), "status": "failed"}), flush=True)
        return 1
    doc = report.as_dict()
    doc["message"] = "; ".join(report.problems)
    print(RESULT_PREFIX + json.dumps(doc), flush=True)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
