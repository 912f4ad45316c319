"""Parses Prometheus text exposition format (0.0.4) from stdin with the official Python
client's parser (prometheus_client.parser) and prints what it found, one line each:

    F <family> <type>
    S <sample> <label=value,...> <value>

Exits non-zero (with the parser's error) if the text does not parse.
Used by crates/server/tests/metrics.rs."""

import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    out = []
    for family in text_string_to_metric_families(text):
        out.append(f"F {family.name} {family.type}")
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out.append(f"S {s.name} {labels or '-'} {s.value!r}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
