"""The Q1 turn on its scripted server: the plan, the failing step, the model's revision
keeping the done steps, the answer in the recalled unit, and the summary remembered."""

from q1_agent import main


def test_the_q1_turn_replans_keeping_done_steps_and_remembers() -> None:
    result = main()
    assert result.outcome == "answer"
    failed = [r.step for r in result.steps_run if r.status == "failed"]
    assert failed == ["s3"]
    _first, revised = result.revisions
    assert [s.status for s in revised.steps[:2]] == ["done", "done"]
    assert result.answer is not None and "k$" in result.answer
    assert result.remembered is not None and result.remembered.stored
