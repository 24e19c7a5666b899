"""``python -m codegen [--check] [--drift URL]``: write, verify or compare the generated ``cdp`` package."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen import _render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed cdp/ differs from the output"
    )
    parser.add_argument(
        "--drift", metavar="URL", help="compare the pinned JSON with a browser's /json/protocol"
    )
    parser.add_argument("--protocol-dir", type=Path, default=_render.PROTOCOL_DIR)
    parser.add_argument("--output", type=Path, default=_render.OUTPUT_DIR)
    args = parser.parse_args(argv)

    if args.drift:
        # Imported here: the engine imports cdp/, and a broken cdp/ must not stop the generator that fixes it.
        from engine import drift as _drift  # noqa: PLC0415

        report = _drift.compare_with(args.drift, args.protocol_dir)
        print(_drift.format_report(report))
        return 0
    protocol = _render.load(args.protocol_dir)
    if args.check:
        differ = _render.check(protocol, args.output)
        if differ:
            print(f"{args.output} is not what the generator writes; differing files:", file=sys.stderr)
            for name in differ:
                print(f"  {name}", file=sys.stderr)
            print("run `python -m codegen` and commit the result", file=sys.stderr)
            paths = [args.output / name for name in differ]
            foreign = [p.name for p in paths if p.exists() and not _render.generated(p)]
            if foreign:
                print(f"(it never removes what it did not write: {', '.join(foreign)})", file=sys.stderr)
            return 1
        print(f"{args.output}: up to date with protocol-json {protocol.version}")
        return 0
    try:
        files = _render.write(protocol, args.output)
    except _render.UnsafeOutput as exc:
        print(f"{exc}; nothing was written (move them away, or choose another --output)", file=sys.stderr)
        return 1
    print(f"wrote {len(files)} files to {args.output} from protocol-json {protocol.version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
