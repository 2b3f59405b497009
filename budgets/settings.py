"""Latency budgets and admission control: `GATEWAY_BUDGET_*`, `GATEWAY_BATCH_BUDGET_*`,
`GATEWAY_ADMISSION_*` and priority selection, validated together at startup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from budgets.priority import PRIORITIES, Priority
from budgets.request_budget import ClassBudgets
from core.env import DAY_S, SettingsError, env_bool, env_choice, env_float, env_int, env_map, env_ms

INTERACTIVE_DEFAULTS = ClassBudgets(total_s=300.0, ttft_s=30.0, admission_s=10.0, stall_s=30.0)
BATCH_DEFAULTS = ClassBudgets(total_s=1800.0, ttft_s=600.0, admission_s=600.0, stall_s=60.0)

_PREFIX: Mapping[Priority, str] = {
    "interactive": "GATEWAY_BUDGET_",
    "batch": "GATEWAY_BATCH_BUDGET_",
}


@dataclass(frozen=True, slots=True)
class BudgetSettings:
    """Stage budgets shared by every class, per-class budgets, and admission control."""

    parse_s: float = 1.0
    exact_cache_s: float = 0.05
    semantic_cache_s: float = 0.25
    classes: Mapping[Priority, ClassBudgets] = field(
        default_factory=lambda: {"interactive": INTERACTIVE_DEFAULTS, "batch": BATCH_DEFAULTS}
    )
    admission: bool = True
    max_inflight: int = 0
    max_queue: int = 1024
    batch_share: float = 0.5
    batch_min_share: float = 0.1
    predict_outcome: bool = True
    output_quantile: float = 0.9
    default_priority: Priority = "interactive"
    priority_by_tenant: Mapping[str, Priority] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> BudgetSettings:
        d = cls()
        classes = {
            priority: _class_budgets(env, _PREFIX[priority], d.classes[priority])
            for priority in PRIORITIES
        }
        shortest_ttft = min(budgets.ttft_s for budgets in classes.values())
        batch_share = env_float(
            env, "GATEWAY_ADMISSION_BATCH_SHARE", d.batch_share, low=0.0, high=1.0
        )
        settings = cls(
            parse_s=env_ms(
                env, "GATEWAY_BUDGET_PARSE_MS", min(d.parse_s, shortest_ttft), high_s=DAY_S
            ),
            exact_cache_s=env_ms(
                env,
                "GATEWAY_BUDGET_EXACT_CACHE_MS",
                min(d.exact_cache_s, shortest_ttft),
                high_s=DAY_S,
            ),
            semantic_cache_s=env_ms(
                env,
                "GATEWAY_BUDGET_SEMANTIC_CACHE_MS",
                min(d.semantic_cache_s, shortest_ttft),
                high_s=DAY_S,
            ),
            classes=classes,
            admission=env_bool(env, "GATEWAY_ADMISSION", d.admission),
            max_inflight=env_int(
                env, "GATEWAY_ADMISSION_MAX_INFLIGHT", d.max_inflight, low=0, high=100_000
            ),
            max_queue=env_int(
                env, "GATEWAY_ADMISSION_MAX_QUEUE", d.max_queue, low=0, high=1_000_000
            ),
            batch_share=batch_share,
            batch_min_share=env_float(
                env,
                "GATEWAY_ADMISSION_BATCH_MIN_SHARE",
                min(d.batch_min_share, batch_share),
                low=0.0,
                high=1.0,
            ),
            predict_outcome=env_bool(env, "GATEWAY_ADMISSION_PREDICT", d.predict_outcome),
            output_quantile=env_float(
                env, "GATEWAY_ADMISSION_OUTPUT_QUANTILE", d.output_quantile, low=0.5, high=0.999
            ),
            default_priority=_priority(env, "GATEWAY_DEFAULT_PRIORITY", d.default_priority),
            priority_by_tenant=_priority_map(env, "GATEWAY_PRIORITY_BY_TENANT"),
        )
        settings.validate()
        return settings

    def validate(self) -> None:
        """Every budget must fit inside the ones that contain it, and batch's guaranteed share
        inside its cap; errors name both variables."""
        if self.batch_min_share > self.batch_share:
            raise SettingsError(
                "GATEWAY_ADMISSION_BATCH_MIN_SHARE must not exceed GATEWAY_ADMISSION_BATCH_SHARE "
                f"({self.batch_min_share:g} > {self.batch_share:g})"
            )
        for priority, budgets in self.classes.items():
            prefix = _PREFIX[priority]
            total = (f"{prefix}TOTAL_MS", budgets.total_s)
            ttft = (f"{prefix}TTFT_MS", budgets.ttft_s)
            _fits(ttft, total)
            _fits((f"{prefix}STALL_MS", budgets.stall_s), total)
            _fits((f"{prefix}ADMISSION_MS", budgets.admission_s), ttft)
            for name, value in (
                ("GATEWAY_BUDGET_PARSE_MS", self.parse_s),
                ("GATEWAY_BUDGET_EXACT_CACHE_MS", self.exact_cache_s),
                ("GATEWAY_BUDGET_SEMANTIC_CACHE_MS", self.semantic_cache_s),
            ):
                _fits((name, value), ttft)


def _class_budgets(env: Mapping[str, str], prefix: str, default: ClassBudgets) -> ClassBudgets:
    """A default that would not fit inside an explicitly configured parent shrinks to it;
    only explicitly configured values that do not fit are errors."""
    total = env_ms(env, f"{prefix}TOTAL_MS", default.total_s, high_s=DAY_S)
    ttft = env_ms(env, f"{prefix}TTFT_MS", min(default.ttft_s, total), high_s=DAY_S)
    return ClassBudgets(
        total_s=total,
        ttft_s=ttft,
        admission_s=env_ms(
            env, f"{prefix}ADMISSION_MS", min(default.admission_s, ttft), high_s=DAY_S
        ),
        stall_s=env_ms(env, f"{prefix}STALL_MS", min(default.stall_s, total), high_s=DAY_S),
    )


def _fits(inner: tuple[str, float], outer: tuple[str, float]) -> None:
    if inner[1] > outer[1]:
        raise SettingsError(
            f"{inner[0]} must not exceed {outer[0]} "
            f"({inner[1] * 1000:g} ms > {outer[1] * 1000:g} ms)"
        )


def _priority(env: Mapping[str, str], name: str, default: Priority) -> Priority:
    return cast(Priority, env_choice(env, name, default, PRIORITIES))


def _priority_map(env: Mapping[str, str], name: str) -> dict[str, Priority]:
    result: dict[str, Priority] = {}
    for tenant, raw in env_map(env, name).items():
        value = raw.lower()
        if value not in PRIORITIES:
            raise SettingsError(
                f"{name}: tenant {tenant!r} has priority {value!r}; "
                f"expected one of {', '.join(PRIORITIES)}"
            )
        result[tenant] = value
    return result
