"""The design's Q1 task as an agent turn: analyse Q1's financial data on a scripted model.

The task (the source design's example for working memory): compute the quarter's total
revenue, find the fastest-growing product line, identify cost anomalies, and write a
summary report. An ``Agent`` (``runtime.agent.turn``) carries it: it recalls what long-term
memory holds for the user (the CFO wants figures in k$), the model writes a plan, each step
runs with tools and the scratchpad, the anomaly step fails (the tool works month by month and
the model asked it for the whole quarter), the model revises the plan keeping the done
steps, the report is written, and the turn's summary is remembered.

The model is a script (``Q1Model``) served by ``cabins.fake_llm.FakeLLMServer``, an
OpenAI-compatible server on 127.0.0.1, and asked through the real ``openai`` client
(``cabins.llm.LLMEndpoint(...).client()``), so every request takes the path a real model's
would. With a real model, give ``main`` its base URL and model name instead. Run it from the
project's root (``pip install -e '.[llm]'``)::

    python examples/q1_financial/q1_agent.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from cabins.fake_llm import FakeLLMServer, FakeReply
from cabins.llm import LLMEndpoint
from runtime import LongTermMemory, SimClock, Tool, ToolArgs, configure_logging
from runtime.agent.turn import Agent
from runtime.agent.turn_state import TurnResult

MONTHS = ("Jan", "Feb", "Mar")
SALES: dict[str, dict[str, tuple[float, float]]] = {  # line -> month -> (revenue, cost), $
    "cloud": {"Jan": (120_000, 70_000), "Feb": (138_000, 78_000), "Mar": (165_000, 91_000)},
    "devices": {"Jan": (210_000, 150_000), "Feb": (205_000, 149_000), "Mar": (214_000, 151_000)},
    "support": {"Jan": (80_000, 40_000), "Feb": (82_000, 41_000), "Mar": (84_000, 83_000)},
    "training": {"Jan": (30_000, 12_000), "Feb": (33_000, 13_000), "Mar": (39_000, 14_000)},
}
USER = {"user": "cfo"}


class NoArgs(ToolArgs):
    pass


class MonthArgs(ToolArgs):
    month: str = Field(description="Jan, Feb or Mar")


class ReportArgs(ToolArgs):
    text: str = Field(description="The report, a few sentences.")


def q1_tools(reports: list[str]) -> list[Tool[Any]]:
    """The analyst's tools over ``SALES``; ``write_report`` appends to ``reports``."""

    def total(args: NoArgs) -> dict[str, Any]:
        revenue = sum(r for line in SALES.values() for r, _ in line.values())
        return {"success": True, "total_revenue": revenue}

    def growth(args: NoArgs) -> dict[str, Any]:
        rates = {
            name: round(100 * (m["Mar"][0] - m["Jan"][0]) / m["Jan"][0], 1)
            for name, m in SALES.items()
        }
        fastest = max(rates, key=lambda name: rates[name])
        return {"success": True, "growth_pct": rates, "fastest": fastest}

    def anomalies(args: MonthArgs) -> dict[str, Any]:
        if args.month not in MONTHS:
            return {"success": False, "error": f"month must be one of {', '.join(MONTHS)}"}
        found = []
        for name, months in SALES.items():
            revenue, cost = months[args.month]
            if cost / revenue > 0.8:  # costs eating the line's revenue
                found.append(
                    {"line": name, "month": args.month, "cost_ratio": round(cost / revenue, 2)}
                )
        return {"success": True, "anomalies": found}

    def report(args: ReportArgs) -> dict[str, Any]:
        reports.append(args.text)
        return {"success": True, "written": len(args.text)}

    return [
        Tool("total_revenue", "Q1's total revenue over every product line, in $.", NoArgs, total),
        Tool("growth_by_line", "Each line's revenue growth Jan to Mar, in %.", NoArgs, growth),
        Tool("cost_anomalies", "Lines whose cost is over 80 % of revenue.", MonthArgs, anomalies),
        Tool("write_report", "Write the summary report.", ReportArgs, report),
    ]  # fmt: skip


# -- the scripted model --------------------------------------------------------------------

PLAN = {
    "steps": [
        {"id": "s1", "description": "Compute Q1 total revenue", "tool": "total_revenue",
         "verify": "total_revenue is saved in the scratchpad", "depends_on": []},
        {"id": "s2", "description": "Find the fastest-growing product line",
         "tool": "growth_by_line", "verify": "fastest_line is saved in the scratchpad",
         "depends_on": []},
        {"id": "s3", "description": "Identify cost anomalies in Q1", "tool": "cost_anomalies",
         "verify": "anomalies are saved in the scratchpad", "depends_on": []},
        {"id": "s4", "description": "Write the summary report", "tool": "write_report",
         "verify": "write_report accepted the report", "depends_on": ["s1", "s2", "s3"]},
    ]
}  # fmt: skip
MONTHLY = {
    "id": "s3b",
    "description": "Identify cost anomalies month by month (Jan, Feb, Mar)",
    "tool": "cost_anomalies",
    "verify": "anomalies of each month are saved in the scratchpad",
    "depends_on": [],
}


class Q1Model:
    """A scripted model for the Q1 task: it answers each request by what the turn asks
    (a plan, a revision, a step's next move, the answer), as a model would."""

    def __call__(self, request: Mapping[str, Any]) -> FakeReply:
        messages: list[Mapping[str, Any]] = request.get("messages", [])
        system = str(messages[0].get("content") or "")
        if not request.get("tools") and system.startswith("You are the planner"):
            asked = str(messages[1].get("content") or "")
            return FakeReply(json.dumps(self.revise(asked) if "\nFeedback:" in asked else PLAN))
        last = messages[-1]
        if last.get("role") == "user" and str(last.get("content")).startswith("Every step"):
            return FakeReply(self.answer(messages))
        return self.move(messages, system)

    @staticmethod
    def revise(asked: str) -> dict[str, Any]:
        """Keep the done steps; replace the failed anomaly step with one month by month."""
        shown = json.loads(asked.split("Plan: ", 1)[1].split("\nFeedback:", 1)[0])
        steps = []
        for step in shown["steps"]:
            step.pop("result", None)
            if step["id"] == "s3":
                steps.append(MONTHLY)
                continue
            if step["id"] == "s4":
                step["depends_on"] = ["s1", "s2", "s3b"]
            steps.append(step)
        return {"steps": steps}

    def move(self, messages: Sequence[Mapping[str, Any]], system: str) -> FakeReply:
        start = max(
            i
            for i, m in enumerate(messages)
            if m.get("role") == "user" and str(m.get("content")).startswith("Current step ")
        )
        step = str(messages[start]["content"]).split()[2].rstrip(":")
        results = [json.loads(str(m["content"])) for m in messages[start:] if m["role"] == "tool"]
        made = sum(1 for m in messages[start:] if m["role"] == "assistant")
        script = self.steps(system).get(step, [])
        if made < len(script):
            return script[made](results)
        return FakeReply(f"Step {step} done: {json.dumps(results[-1]) if results else 'ok'}")

    @staticmethod
    def steps(system: str) -> dict[str, list[Any]]:
        """Each step's moves, in order: a function of the tool results so far."""
        thousands = "k$" in system  # what long-term memory recalled about the reader

        def money(value: float) -> str:
            return f"{value / 1000:g} k$" if thousands else f"${value:,.0f}"

        def save(key: str, pick: Any) -> Any:
            return lambda r: FakeReply.calls(("save_to_scratchpad", {"key": key, "value": pick(r)}))

        def report(r: list[Any]) -> FakeReply:
            return FakeReply.calls(("write_report", {"text": summary(system)}))

        return {
            "s1": [
                lambda r: FakeReply.calls(("total_revenue", {})),
                save("total_revenue", lambda r: money(r[-1]["total_revenue"])),
            ],
            "s2": [
                lambda r: FakeReply.calls(("growth_by_line", {})),
                save("fastest_line", lambda r: fastest(r[-1])),
            ],
            "s3": [lambda r: FakeReply.calls(("cost_anomalies", {"month": "Q1"}))],
            "s3b": [
                lambda r: FakeReply.calls(*(("cost_anomalies", {"month": m}) for m in MONTHS)),
                save("anomalies", lambda r: [a for x in r for a in x["anomalies"]]),
            ],
            "s4": [report],
        }  # fmt: skip

    @staticmethod
    def answer(messages: Sequence[Mapping[str, Any]]) -> str:
        return summary(str(messages[0].get("content") or "")) + " The report is written."


def fastest(growth: Mapping[str, Any]) -> str:
    line = growth["fastest"]
    return f"{line} (+{growth['growth_pct'][line]} %)"


def summary(system: str) -> str:
    """The report from the scratchpad's notes, as a system prompt shows them."""
    notes = {
        line.split(":", 1)[0].strip("- "): line.split(":", 1)[1].strip().strip('"')
        for line in system.split("Scratchpad", 1)[-1].splitlines()[1:]
        if line.startswith("- ") and ":" in line
    }
    return (
        f"Q1 revenue was {notes.get('total_revenue', '?')}; the fastest-growing line was "
        f"{notes.get('fastest_line', '?')}; cost anomalies: {notes.get('anomalies', 'none')}."
    )


# -- the run ---------------------------------------------------------------------------------


def main(base_url: str | None = None, model: str = "scripted-q1") -> TurnResult:
    """Run the Q1 turn on the scripted server (or on the model at ``base_url``) and print
    what it did; the result."""
    configure_logging(level="warning")
    memory = LongTermMemory(":memory:")
    memory.remember(
        "The CFO wants every figure in reports in thousands of dollars (k$).", scope=USER
    )
    reports: list[str] = []
    server = FakeLLMServer([Q1Model()]).start() if base_url is None else None
    try:
        client = LLMEndpoint(base_url=server.url if server else base_url, model=model).client()
        agent = Agent(client, tools=q1_tools(reports), memory=memory, scope=USER, clock=SimClock())
        result = agent.run(
            "Analyse Q1's financial data: total revenue, the fastest-growing product line, "
            "cost anomalies, and a summary report."
        )
    finally:
        if server is not None:
            server.close()
    show(result, reports)
    print(
        "recalled next time:",
        memory.recall("Q1 revenue report", scope=USER, k=1)[0].content.splitlines()[0],
    )
    memory.close()
    return result


def show(result: TurnResult, reports: Sequence[str]) -> None:
    print(f"outcome: {result.outcome} ({result.detail}); {result.calls} model requests")
    print("recalled:", *result.recalled)
    for plan in result.revisions:
        print(
            f"plan revision {plan.revision}:", ", ".join(f"{s.id}[{s.status}]" for s in plan.steps)
        )
    for run in result.steps_run:
        why = f" ({run.reason}: {run.detail})" if run.reason else ""
        print(f"  {run.step} {run.status} after {run.iterations} requests{why}")
    print("final plan:", result.step_states())
    print("answer:", result.answer)
    print("report:", reports[-1] if reports else None)
    if result.remembered is not None:
        print(
            "remembered:", result.remembered.reason, "|", result.remembered.content.splitlines()[0]
        )


if __name__ == "__main__":
    outcome = main(*sys.argv[1:3]).outcome
    sys.exit(0 if outcome == "answer" else 1)
