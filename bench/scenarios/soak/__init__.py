"""The soak (issue #14): mixed traffic for minutes against a multi-worker gateway in front of two
stand-in replicas and Redis Stack, with periodic faults, sampling throughput, latency, errors,
and each gateway process's RSS, open descriptors and asyncio tasks; a verdict on leaks.

    .venv/bin/python -m bench.scenarios.soak [--duration 600] [--out DIR]
"""
