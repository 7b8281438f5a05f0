#!/usr/bin/env python3
"""Checks a `loadtest lab` output folder from scripts/compose-e2e.sh and prints its figures.

Fails (exit 1) unless: report.html and summary.md exist; each API has a results file whose counts
reconcile (offered = sent + not_sent, sent = completed = 201 + replayed + errors, at least one 201);
no invariant the lab checked failed; and the money does: every live charge has its order and every
order one live charge (charges − voids = orders), no key charged twice, none left CHARGING.
Usage: compose-e2e-check.py REPORT_DIR
"""

import json
import sys
from pathlib import Path

APIS = ("blocking", "reactive")


def check_one(path: Path) -> list[str]:
    r = json.loads(path.read_text())
    s, m = r["summary"], r.get("money")
    bad = []
    if s["offered"] != s["sent"] + s["not_sent"]:
        bad.append(f"offered {s['offered']} != sent {s['sent']} + not_sent {s['not_sent']}")
    if not s["sent"] == s["completed"] == s["ok"] + s["replayed"] + s["errors"]:
        bad.append(
            f"sent {s['sent']}, completed {s['completed']}, "
            f"201 + replayed + errors = {s['ok'] + s['replayed'] + s['errors']}"
        )
    if s["ok"] == 0:
        bad.append("no order created")
    bad += [f"invariant failed: {i['name']}: {i['detail']}" for i in r["invariants"] if i["ok"] is False]
    if m is None:
        bad.append("no money check (mock-deps ledger or database not reached)")
    else:
        if m["charges"] - m["voids"] != m["orders"]:
            bad.append(f"money: {m['charges']} charges − {m['voids']} voids != {m['orders']} orders")
        for k in ("charges_without_order", "orders_without_charge", "double_charges", "charging_left"):
            if m[k] != 0:
                bad.append(f"money: {k} = {m[k]}")
    return bad


def row(path: Path) -> dict:
    r = json.loads(path.read_text())
    p, s, m = r["plateau"] or r["summary"], r["summary"], r["money"]
    return {
        "2xx share (plateau)": f"{100 * (p['ok'] + p['replayed']) / max(p['completed'], 1):.1f} %",
        "orders/s (plateau)": f"{p['ok_throughput_rps']:.1f}",
        "p99 of the 201s (plateau)": f"{p['ok_latency_ms']['p99'] / 1000:.2f} s",
        "p50 of the 201s (plateau)": f"{p['ok_latency_ms']['p50'] / 1000:.2f} s",
        "requests / 201s (whole run)": f"{s['completed']:,} / {s['ok']:,}",
        "errors by kind": ", ".join(f"{k} {v:,}" for k, v in sorted(s["errors_by_kind"].items())) or "none",
        "money (whole run)": f"{m['charges']:,} charges = {m['orders']:,} orders" if m else "?",
    }


def main() -> int:
    out = Path(sys.argv[1])
    bad = [f"{out}/{f} missing" for f in ("report.html", "summary.md") if not (out / f).is_file()]
    rows = {}
    for api in APIS:
        files = sorted(out.glob(f"results-{api}-*.json"))
        if not files:
            bad.append(f"no results-{api}-*.json in {out}")
        for f in files:
            bad += [f"{f.name}: {b}" for b in check_one(f)]
            rows[f.stem.removeprefix("results-")] = row(f)
    if rows:
        names = list(rows)
        print("| | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for key in next(iter(rows.values())):
            print(f"| {key} | " + " | ".join(rows[n][key] for n in names) + " |")
    for b in bad:
        print(f"compose-e2e-check: {b}", file=sys.stderr)
    print(f"compose-e2e-check: {'FAILED' if bad else 'counts and money reconcile'} ({out})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
